package sis

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// TestEmptyRecordTagClears: an empty text or grouped record tag is SIS
// §1.6.3's "empty P tag deletes the value" (processing rules R10): the field is
// cleared, in an increment (FLOP) and in a full snapshot (DNLD) alike, and no
// empty item is ever produced. Empty occurrences next to real ones carry
// nothing and are dropped.
func TestEmptyRecordTagClears(t *testing.T) {
	forms := map[string]func(tag string) string{
		"self-closing": func(tag string) string { return "<" + tag + "/>" },
		"open-close":   func(tag string) string { return "<" + tag + "></" + tag + ">" },
		"blank text":   func(tag string) string { return "<" + tag + ">  \n </" + tag + ">" },
		"twice empty":  func(tag string) string { return "<" + tag + "/><" + tag + "></" + tag + ">" },
	}
	for _, tag := range []string{"SRVT", "VIPF", "MAFL", "PSHT", "TIPT", "PORT"} {
		for name, form := range forms {
			body := form(tag)
			want := flight.Command{Tag: tag, Op: flight.OpClear}
			t.Run(tag+"/"+name+"/FLOP", func(t *testing.T) {
				msg := mustDecode(t, flop(tag, flopHead+body))
				if diff := cmp.Diff(want, cmdOf(t, msg.Records[0], tag)); diff != "" {
					t.Fatalf("FLOP %s: command (-want +got):\n%s", body, diff)
				}
			})
			t.Run(tag+"/"+name+"/DNLD", func(t *testing.T) {
				msg := mustDecode(t, dnld(fltr("121112312", body)))
				if diff := cmp.Diff(want, cmdOf(t, msg.Records[0], tag)); diff != "" {
					t.Fatalf("DNLD %s: command (-want +got):\n%s", body, diff)
				}
			})
		}
		t.Run(tag+"/empty beside a real one", func(t *testing.T) {
			body := "<" + tag + "/><" + tag + ">x</" + tag + "><" + tag + "></" + tag + ">"
			want := flight.Command{Tag: tag, Op: flight.OpReplace, Items: []flight.Item{{flight.TextKey: "x"}}}
			msg := mustDecode(t, flop(tag, flopHead+body))
			if diff := cmp.Diff(want, cmdOf(t, msg.Records[0], tag)); diff != "" {
				t.Fatalf("FLOP %s: command (-want +got):\n%s", body, diff)
			}
		})
	}
}
