package pump_test

import (
	"fmt"
	"testing"
)

// A steady stream's message, a batch of one, costs the mailbox two head
// reads and a write-back: the read that finds it and, after its batch, the
// write-back with the read that finds the head empty. The read that found
// it took every row the head held, so nothing is read ahead beside its
// batch (that read found nothing almost every time: a third of the reads).
// A backlog's read that the batch size cut is still read ahead of.
func TestSteadyStreamReadsTheHeadTwiceAMessage(t *testing.T) {
	t.Parallel()
	h := newMemHarness(t, "mailbox: {batchSize: 2}")
	p := h.newPump()
	const n = 10
	for i := range n {
		id := h.put(h.flop("ESTT", 9, fmt.Sprintf("<ESTT>09SEP26%04d</ESTT>", 900+i)))
		if worked, _, err := p.Step(t.Context()); err != nil || !worked {
			t.Fatalf("step with row %d at the head: worked %v, %v", id, worked, err)
		}
		if worked, _, err := p.Step(t.Context()); err != nil || worked {
			t.Fatalf("step after row %d: worked %v, %v", id, worked, err)
		}
		h.wantRow(id, "SUCCEEDED", "")
	}
	h.inbox.Lock()
	reads, backs := len(h.inbox.Reads), len(h.inbox.Backs)
	h.inbox.Unlock()
	if reads != 2*n || backs != n {
		t.Fatalf("%d messages one at a time: %d head reads, %d write-backs; want %d, %d", n, reads, backs, 2*n, n)
	}

	// A backlog of five in batches of two: the first read is cut by the
	// batch size, so the next batch is read ahead while it is applied.
	for i := range 5 {
		h.put(h.flop("ESTT", 9, fmt.Sprintf("<ESTT>09SEP26%04d</ESTT>", 1000+i)))
	}
	for {
		worked, _, err := p.Step(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !worked {
			break
		}
	}
	h.inbox.Lock()
	defer h.inbox.Unlock()
	ahead := 0
	for _, r := range h.inbox.Reads[reads:] {
		if r.Skipped > 0 && r.Rows > 0 {
			ahead++
		}
	}
	if ahead == 0 {
		t.Fatalf("a backlog was not read ahead: %+v", h.inbox.Reads[reads:])
	}
	if len(h.inbox.Results) != n+5 {
		t.Fatalf("%d rows written back, want %d", len(h.inbox.Results), n+5)
	}
}
