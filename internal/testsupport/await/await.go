// Package await is the tests' one way to wait for something that happens
// in the background: poll a condition until it holds or a deadline
// passes, and on failure say what was awaited, for how long and what the
// condition last saw. Never an assertion on how long something took.
package await

import (
	"testing"
	"time"
)

// Interval is how often Eventually polls.
const Interval = 50 * time.Millisecond

// Eventually polls cond every Interval until it holds, failing the test
// when it still does not hold at within. cond returns whether it holds and
// a description of what it saw, the failure message's "last seen".
func Eventually(t testing.TB, what string, within time.Duration, cond func() (bool, string)) {
	t.Helper()
	EventuallyEvery(t, what, within, Interval, cond)
}

// EventuallyEvery is Eventually polling every every. cond is first called
// at once and last called at the deadline, never after it.
func EventuallyEvery(t testing.TB, what string, within, every time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, desc := cond()
		if ok {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			if desc == "" {
				t.Fatalf("timed out after %s waiting for %s", within, what)
				return
			}
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", within, what, desc)
			return
		}
		time.Sleep(min(every, left))
	}
}
