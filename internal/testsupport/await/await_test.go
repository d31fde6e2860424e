package await

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that records Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msg = format
	for _, a := range args {
		r.msg += " " + toString(a)
	}
}

func toString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case time.Duration:
		return v.String()
	}
	return "?"
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	r := &recorder{TB: t}
	n := 0
	Eventually(r, "three calls", time.Second, func() (bool, string) { n++; return n == 3, "" })
	if r.msg != "" || n != 3 {
		t.Fatalf("calls %d, failure %q; want 3 calls and no failure", n, r.msg)
	}
}

func TestEventuallyFailsAtTheDeadlineWithTheLastDescription(t *testing.T) {
	r := &recorder{TB: t}
	start := time.Now()
	var last time.Time
	n := 0
	EventuallyEvery(r, "never", 120*time.Millisecond, 50*time.Millisecond, func() (bool, string) {
		n++
		last = time.Now()
		return false, "seen " + strings.Repeat("x", n)
	})
	if !strings.Contains(r.msg, "never") || !strings.Contains(r.msg, "seen "+strings.Repeat("x", n)) {
		t.Errorf("failure %q: want what was awaited and the last description", r.msg)
	}
	if d := last.Sub(start); d < 120*time.Millisecond {
		t.Errorf("last call %s after the start, before the deadline", d)
	}
	if n < 3 {
		t.Errorf("%d calls; want the first, one per interval and one at the deadline", n)
	}
}
