package snapshot

import (
	"errors"
	"slices"
	"testing"
)

func TestAttribute(t *testing.T) {
	sentBefore := func(days ...string) func(string, string) bool {
		return func(d, sender string) bool { return sender == "AODB" && slices.Contains(days, d) }
	}
	d9, d10 := "2026-09-09", "2026-09-10"
	cases := []struct {
		name   string
		in     Inbound
		req    Requests
		want   Coverage
		reject string
	}{
		{"RESP answering the live request", Inbound{Styp: "RESP", Sender: "AODB", Days: []string{d9, d9}},
			Requests{PendingDay: d9}, Coverage{FullDay: true, Day: d9, CompletesPending: true}, ""},
		{"late RESP for a day requested before", Inbound{Styp: "RESP", Sender: "AODB", Days: []string{d9}},
			Requests{PendingDay: d10, RequestedBefore: sentBefore(d9)}, Coverage{FullDay: true, Day: d9}, ""},
		{"empty RESP while a request is live", Inbound{Styp: "RESP", Sender: "AODB"},
			Requests{PendingDay: d10}, Coverage{FullDay: true, Day: d10, CompletesPending: true, Flags: []string{FlagEmpty}}, ""},
		{"empty RESP with nothing live", Inbound{Styp: "RESP", Sender: "AODB"},
			Requests{}, Coverage{Flags: []string{FlagEmpty, FlagUnsolicited}}, ""},
		{"RESP never requested", Inbound{Styp: "RESP", Sender: "AODB", Days: []string{d9}},
			Requests{RequestedBefore: sentBefore()}, Coverage{Flags: []string{FlagUnsolicited}}, ""},
		{"RESP from the sender asked", Inbound{Styp: "RESP", Sender: "AODB", Days: []string{d9}},
			Requests{PendingDay: d9, PendingSender: "AODB"}, Coverage{FullDay: true, Day: d9, CompletesPending: true}, ""},
		{"RESP from another sender is unsolicited", Inbound{Styp: "RESP", Sender: "FIDS", Days: []string{d9}},
			Requests{PendingDay: d9, PendingSender: "AODB", RequestedBefore: sentBefore(d9)}, Coverage{Flags: []string{FlagUnsolicited}}, ""},
		{"empty RESP from another sender is unsolicited", Inbound{Styp: "RESP", Sender: "FIDS"},
			Requests{PendingDay: d9, PendingSender: "AODB"}, Coverage{Flags: []string{FlagEmpty, FlagUnsolicited}}, ""},
		{"DNLD from any sender completes its day", Inbound{Styp: "DNLD", Sender: "FIDS", Days: []string{d9}, DNLDFullDay: true},
			Requests{PendingDay: d9, PendingSender: "AODB"}, Coverage{FullDay: true, Day: d9, CompletesPending: true}, ""},
		{"RESP over two days", Inbound{Styp: "RESP", Sender: "AODB", Days: []string{d9, d10}},
			Requests{PendingDay: d9}, Coverage{}, ReasonMixedDays},
		{"DNLD is a window by default", Inbound{Styp: "DNLD", Days: []string{d9}},
			Requests{PendingDay: d9}, Coverage{}, ""},
		{"DNLD full day when configured", Inbound{Styp: "DNLD", Days: []string{d9}, DNLDFullDay: true},
			Requests{PendingDay: d9}, Coverage{FullDay: true, Day: d9, CompletesPending: true}, ""},
		{"DNLD full day completes only its day", Inbound{Styp: "DNLD", Days: []string{d9}, DNLDFullDay: true},
			Requests{PendingDay: d10}, Coverage{FullDay: true, Day: d9}, ""},
		{"multi-day DNLD stays a window", Inbound{Styp: "DNLD", Days: []string{d9, d10}, DNLDFullDay: true},
			Requests{}, Coverage{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Attribute(c.in, c.req)
			if c.reject != "" {
				var rej *Rejection
				if !errors.As(err, &rej) || rej.Reason != c.reject {
					t.Fatalf("got %+v, %v; want rejection %s", got, err, c.reject)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.FullDay != c.want.FullDay || got.Day != c.want.Day || got.CompletesPending != c.want.CompletesPending ||
				!slices.Equal(got.Flags, c.want.Flags) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
