package sis

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecode feeds arbitrary bytes to the decoder. It must never panic,
// whatever it returns must be coherent (an *Error with a known reason and
// class, or a message whose every record passes flight.Commands.Validate),
// and the chunked parallel path must give exactly the sequential outcome.
// The checked-in corpus is under testdata/fuzz/FuzzDecode/. Seeds stay small
// (well under 1 KB): the fuzzer minimises every new interesting input, and
// minimising multi-kilobyte documents eats the whole time budget.
func FuzzDecode(f *testing.F) {
	f.Add(flop("GTDT", flopHead+`<GTDT GTNO="0"/>`))
	f.Add(flop("FDEL", "<FLID>1</FLID>"))
	f.Add(dnld(fltr("1", ""), fltr("2", "<FLNO>CA2</FLNO>"), fltr("3", `<GTDT GTNO="1"><GATE>A</GATE></GTDT>`), fltr("4", ""), fltr("5", "")))
	forceParallel(f)
	known := map[Reason]bool{}
	for _, r := range Reasons {
		known[r] = true
	}
	opts := Options{MaxBytes: 1 << 20, MaxDepth: 16, Workers: 1}
	parallel := opts
	parallel.Workers = 2
	f.Fuzz(func(t *testing.T, raw []byte) {
		msg, err := Decode(raw, opts)
		parMsg, parErr := Decode(raw, parallel)
		if fmt.Sprint(err) != fmt.Sprint(parErr) || !cmp.Equal(msg, parMsg) {
			t.Fatalf("parallel outcome differs: %v / %v\n%s", err, parErr, cmp.Diff(msg, parMsg))
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is not a *sis.Error: %v", err)
			}
			if !known[e.Reason] || e.Class != ClassOf(e.Reason) {
				t.Fatalf("incoherent error %#v", e)
			}
			if msg != nil && (msg.Records != nil || msg.Deletions != nil) {
				t.Fatalf("rejected message carries records")
			}
			return
		}
		if msg == nil {
			t.Fatal("nil message without error")
		}
		for _, rec := range msg.Records {
			if err := rec.Validate(); err != nil {
				t.Fatalf("record %d: %v", rec.Index, err)
			}
			if rec.Full != msg.IsFullSnapshot() {
				t.Fatalf("record %d Full=%v in %s message", rec.Index, rec.Full, msg.Kind)
			}
		}
		if msg.Kind == KindSnapshot && msg.Recs != len(msg.Records) {
			t.Fatalf("RECS %d but %d records accepted", msg.Recs, len(msg.Records))
		}
	})
}
