package engine_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// adft is an SCHD ADFT message carrying FLTR records.
func adft(records ...string) string {
	body := ""
	for _, r := range records {
		body += "<FLTR>" + r + "</FLTR>"
	}
	return `<MSG><META><SNDR>AODB</SNDR><RCVR>RMS</RCVR><SEQN>43</SEQN><DDTM>20260909101500</DDTM>` +
		`<TYPE>SCHD</TYPE><STYP>ADFT</STYP></META><SCHD>` + body + `</SCHD></MSG>`
}

// One message's change applied to a working set: what it changed (the
// versions its outbox events carry) and the history times it set
// implausibly far from their flight's day, kept as sent. A change the
// engine refuses leaves the set as it was.
func TestWorkingSetApply(t *testing.T) {
	t.Parallel()
	plausible := engine.Plausibility{Location: time.UTC, Window: 72 * time.Hour}
	const missing = flight.FLID(99)
	// decoded is a SIS message's change and meta, as the pump hands them
	// over.
	type decoded struct {
		meta   engine.Meta
		change engine.Change
	}
	decode := func(raw string) decoded {
		m, err := sis.DecodeString(raw, sis.Options{})
		if err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		d := decoded{meta: engine.Meta{MessageID: msgID, Type: m.Meta.Type, Styp: m.Meta.Styp},
			change: engine.Change{Deletions: m.Deletions}}
		for _, r := range m.Records {
			d.change.Increments = append(d.change.Increments, r.Commands)
		}
		return d
	}
	estt := func(flid flight.FLID) flight.Commands {
		return flight.Commands{FLID: flid, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261000"}}}
	}
	for name, c := range map[string]struct {
		msg      decoded
		want     engine.MessageEffect
		wantErr  bool
		wantKept map[string]string // scalars of CA100's pending write
	}{
		"a FLOP changes its flight": {
			msg:  decode(flop("ESTT", `<FLID>121112312</FLID><ESTT>09SEP261000</ESTT>`)),
			want: engine.MessageEffect{Versions: map[flight.FLID]int64{ca100: firstV}},
		},
		"a FLOP that changes nothing has no version": {
			msg:  decode(flop("ESTT", `<FLID>121112312</FLID><ESTT>09SEP260900</ESTT>`)),
			want: engine.MessageEffect{Versions: map[flight.FLID]int64{}},
		},
		"a CNCL within the window is plausible": {
			msg:  decode(flop("CNCL", `<FLID>121112312</FLID><CNCL>09SEP261200</CNCL>`)),
			want: engine.MessageEffect{Versions: map[flight.FLID]int64{ca100: firstV}},
		},
		"a CNCL far from the flight's day is kept, and named": {
			msg: decode(flop("CNCL", `<FLID>121112312</FLID><CNCL>01JAN000000</CNCL>`)),
			want: engine.MessageEffect{Versions: map[flight.FLID]int64{ca100: firstV},
				ImplausibleFLID: ca100, ImplausibleTags: []string{"CNCL"}},
			wantKept: map[string]string{"CNCL": "01JAN000000"},
		},
		"an ADFT's NAAT far from the flight's day is named": {
			msg: decode(adft(`<FLID>121112312</FLID><NAAT>01JAN300000</NAAT>`)),
			want: engine.MessageEffect{Versions: map[flight.FLID]int64{ca100: firstV},
				ImplausibleFLID: ca100, ImplausibleTags: []string{"NAAT"}},
			wantKept: map[string]string{"NAAT": "01JAN300000"},
		},
		"an FDEL deletes: its tombstone's version": {
			msg:  decode(flop("FDEL", `<FLID>121112312</FLID>`)),
			want: engine.MessageEffect{Versions: map[flight.FLID]int64{ca100: firstV}},
		},
		"an FDEL of a flight that does not exist changes nothing": {
			msg:  decode(flop("FDEL", `<FLID>99</FLID>`)),
			want: engine.MessageEffect{Versions: map[flight.FLID]int64{}},
		},
		"a FLOP for a flight not prefetched is refused whole": {
			msg:     decode(flop("ESTT", `<FLID>121112312</FLID><ESTT>09SEP261000</ESTT>`, `<FLID>55</FLID><ESTT>09SEP261000</ESTT>`)),
			wantErr: true,
		},
		"increments and deletions at once are refused": {
			msg: decoded{meta: engine.Meta{MessageID: msgID, Type: "FLOP", Styp: "FDEL"},
				change: engine.Change{Increments: []flight.Commands{estt(ca100)}, Deletions: []flight.FLID{missing}}},
			wantErr: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			set := engine.NewWorkingSet([]flight.FLID{ca100, missing}, map[flight.FLID]flight.State{ca100: seedCA100()},
				[]int64{firstV, firstV + 1}, now)
			got, err := set.Apply(c.msg.meta, c.msg.change, plausible)
			if c.wantErr {
				if err == nil {
					t.Fatalf("no error, effect %+v", got)
				}
				if set.Dirty() {
					t.Fatalf("a refused message left %+v in the set", set.Pending())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("effect (-want +got):\n%s", diff)
			}
			if got.Versions == nil {
				t.Fatal("Versions is nil")
			}
			if dirty := len(got.Versions) > 0; set.Dirty() != dirty {
				t.Fatalf("Dirty = %v with versions %v", set.Dirty(), got.Versions)
			}
			for tag, v := range c.wantKept {
				writes := set.Pending().Writes
				if len(writes) != 1 || writes[0].Next.Scalars[tag] != v {
					t.Fatalf("%s not kept as sent (%q): writes %+v", tag, v, writes)
				}
			}
		})
	}
}
