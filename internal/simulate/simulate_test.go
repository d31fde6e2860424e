package simulate

import (
	"errors"
	"slices"
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
