package simulate

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// The stream decodes as the pump will see it: every message valid except
// the malformed ones, which fail with their own reasons; every mapped
// field kind appears as a FLOP.
func TestStreamDecodes(t *testing.T) {
	opts := Options{Day: "2026-09-09", Flights: 12, Malformed: 5, Seed: 7}
	resp, err := sis.DecodeString(Response(opts).Body, sis.Options{})
	if err != nil {
		t.Fatalf("RESP: %v", err)
	}
	if resp.Kind != sis.KindSnapshot || len(resp.Records) != 12 {
		t.Fatalf("RESP: %s with %d records", resp.Kind, len(resp.Records))
	}
	for _, r := range resp.Records {
		if r.OperationDay != "2026-09-09" {
			t.Fatalf("record %s on %s", r.FLID, r.OperationDay)
		}
	}
	var flopKinds []string
	var reasons []sis.Reason
	for _, m := range Stream(opts) {
		msg, err := sis.DecodeString(m.Body, sis.Options{})
		if err != nil {
			var se *sis.Error
			if !errors.As(err, &se) {
				t.Fatalf("%s: %v", m.What, err)
			}
			reasons = append(reasons, se.Reason)
			continue
		}
		if msg.Kind == sis.KindFLOP {
			flopKinds = append(flopKinds, msg.Meta.Styp)
		}
	}
	for _, f := range flight.Fields() {
		if !slices.Contains(flopKinds, f.Tag) {
			t.Errorf("no FLOP %s in the stream", f.Tag)
		}
	}
	if len(reasons) != 5 {
		t.Fatalf("malformed messages rejected: %v, want 5", reasons)
	}
	if again := Stream(opts); again[3].Body != Stream(opts)[3].Body {
		t.Fatal("the same seed gave another stream")
	}
}

// A backlog decodes into FLOPs of the RESP's flights, and no message
// repeats its flight's previous value of the same kind.
func TestBacklogChangesItsFlight(t *testing.T) {
	opts := Options{Day: "2026-09-09", Flights: 7, Seed: 3}
	resp, err := sis.DecodeString(Response(opts).Body, sis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, r := range resp.Records {
		known[r.FLID.String()] = true
	}
	last := map[string]string{}
	for i, m := range Backlog(opts, 300) {
		msg, err := sis.DecodeString(m.Body, sis.Options{})
		if err != nil {
			t.Fatalf("message %d (%s): %v", i, m.What, err)
		}
		if msg.Kind != sis.KindFLOP || len(msg.Records) != 1 {
			t.Fatalf("message %d: %s with %d records", i, msg.Kind, len(msg.Records))
		}
		flid := msg.Records[0].FLID.String()
		if !known[flid] {
			t.Fatalf("message %d: FLID %s is not in the RESP", i, flid)
		}
		inner := m.Body[strings.Index(m.Body, "</FLID>"):]
		key := flid + " " + msg.Meta.Styp
		if last[key] == inner {
			t.Fatalf("message %d repeats the previous %s of flight %s: %s", i, msg.Meta.Styp, flid, inner)
		}
		last[key] = inner
	}
}
