package pump_test

import (
	"fmt"
	"testing"
	"time"
)

// After a batch the head is read again at pollInterval/16, then every
// pollInterval/8 while it stays empty (never a longer step: a message of a
// steady 50 msg/s that just missed a read would wait for a doubled one),
// and at pollInterval once the waits add up to about one pollInterval; a
// pump that has not seen a row waits pollInterval. Each wait is the one
// the loop's step returns after an empty head read, and a batch is a row
// put in the mailbox and applied by a step: the reset to the short wait
// is the loop's own, not the test's.
func TestEmptyWaitPollsSoonWhileRowsArrive(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	us := time.Microsecond
	for _, tc := range []struct {
		name  string
		poll  time.Duration
		batch []bool // before each empty read: did a batch come first?
		want  []time.Duration
	}{
		{"idle from the start", 100 * ms, []bool{false, false, false}, []time.Duration{100 * ms, 100 * ms, 100 * ms}},
		{"after a batch", 100 * ms, []bool{true, false, false, false, false, false, false, false, false, false},
			[]time.Duration{6250 * us, 12500 * us, 12500 * us, 12500 * us, 12500 * us, 12500 * us, 12500 * us, 12500 * us, 100 * ms, 100 * ms}},
		{"a batch between empty reads starts again", 100 * ms, []bool{true, false, true, false},
			[]time.Duration{6250 * us, 12500 * us, 6250 * us, 12500 * us}},
		{"a batch after the wait fell back to pollInterval starts again", 16 * ms,
			[]bool{true, false, false, false, false, false, false, false, false, true},
			[]time.Duration{1 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 16 * ms, 1 * ms}},
		{"a short interval is kept", 1 * ms, []bool{true, false}, []time.Duration{1 * ms, 1 * ms}},
		{"never below a millisecond", 10 * ms, []bool{true, false, false, false, false, false},
			[]time.Duration{1 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 10 * ms}},
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
