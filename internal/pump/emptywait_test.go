package pump_test

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// After a batch the head is read again every pollInterval/16 (at least a
// millisecond) while it stays empty (never a longer step: a message of a
// steady 50 msg/s that just missed a read would wait for it), and at
// pollInterval once the waits add up to about one pollInterval; a pump
// that has not seen a row waits pollInterval. Each wait is the one the
// loop's step returns after an empty head read, and a batch is a row put
// in the mailbox and applied by a step: the reset to the short wait is the
// loop's own, not the test's.
func TestEmptyWaitPollsSoonWhileRowsArrive(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	us := time.Microsecond
	// reads are n empty reads, the first after a batch when batch is set.
	reads := func(batch bool, n int) []bool {
		out := make([]bool, n)
		out[0] = batch
		return out
	}
	waits := func(d time.Duration, n int) []time.Duration { return slices.Repeat([]time.Duration{d}, n) }
	for _, tc := range []struct {
		name  string
		poll  time.Duration
		batch []bool // before each empty read: did a batch come first?
		want  []time.Duration
	}{
		{"idle from the start", 100 * ms, reads(false, 3), waits(100*ms, 3)},
		{"after a batch", 100 * ms, reads(true, 17), append(waits(6250*us, 15), 100*ms, 100*ms)},
		{"a batch between empty reads starts again", 16 * ms, append(reads(true, 10), reads(true, 16)...),
			append(waits(ms, 25), 16*ms)},
		{"a batch after the wait fell back to pollInterval starts again", 16 * ms, append(reads(true, 16), reads(true, 1)...),
			append(waits(ms, 15), 16*ms, ms)},
		{"a short interval is kept", 1 * ms, reads(true, 2), waits(ms, 2)},
		{"never below a millisecond", 10 * ms, reads(true, 10), append(waits(ms, 9), 10*ms)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newMemHarness(t)
			h.feed.Spec.Mailbox.PollInterval.Duration = tc.poll
			p := h.newPump()
			for i, batch := range tc.batch {
				if batch {
					id := h.put(h.flop("ESTT", 9, fmt.Sprintf("<ESTT>09SEP26%04d</ESTT>", 900+i)))
					if worked, _, err := p.Step(t.Context()); err != nil || !worked {
						t.Fatalf("step %d with row %d at the head: worked %v, %v", i, id, worked, err)
					}
				}
				worked, wait, err := p.Step(t.Context())
				if err != nil || worked {
					t.Fatalf("empty read %d: worked %v, %v", i, worked, err)
				}
				if wait != tc.want[i] {
					t.Fatalf("empty read %d: wait %s, want %s", i, wait, tc.want[i])
				}
			}
		})
	}
}
