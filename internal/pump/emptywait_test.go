package pump

import (
	"testing"
	"time"
)

// After a batch the head is read again at pollInterval/16, doubling while
// it stays empty, and at pollInterval once it has been empty for about one
// pollInterval; a pump that has not seen a row waits pollInterval.
func TestEmptyWaitPollsSoonWhileRowsArrive(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		poll  time.Duration
		batch []bool // before each empty read: did a batch come first?
		want  []time.Duration
	}{
		{"idle from the start", 100 * ms, []bool{false, false, false}, []time.Duration{100 * ms, 100 * ms, 100 * ms}},
		{"after a batch", 100 * ms, []bool{true, false, false, false, false, false, false},
			[]time.Duration{6250 * time.Microsecond, 12500 * time.Microsecond, 25 * ms, 50 * ms, 100 * ms, 100 * ms, 100 * ms}},
		{"a batch between empty reads starts again", 100 * ms, []bool{true, false, true, false},
			[]time.Duration{6250 * time.Microsecond, 12500 * time.Microsecond, 6250 * time.Microsecond, 12500 * time.Microsecond}},
		{"a short interval is kept", 1 * ms, []bool{true, false}, []time.Duration{1 * ms, 1 * ms}},
		{"never below a millisecond", 10 * ms, []bool{true, false, false, false, false},
			[]time.Duration{1 * ms, 2 * ms, 4 * ms, 8 * ms, 10 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pump{emptyReads: -1}
			for i, batch := range tc.batch {
				if batch {
					p.emptyReads = 0 // what step does after a batch
				}
				if got := p.emptyWait(tc.poll); got != tc.want[i] {
					t.Fatalf("empty read %d: wait %s, want %s", i, got, tc.want[i])
				}
			}
		})
	}
}
