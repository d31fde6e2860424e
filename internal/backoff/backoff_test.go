package backoff

import (
	"math/rand/v2"
	"testing"
	"time"
)

// fixed is a Rand that always draws the same end of the range.
type fixed bool

func (top fixed) Int64N(n int64) int64 {
	if top {
		return n - 1
	}
	return 0
}

func TestDelay(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	for _, tc := range []struct {
		name            string
		attempt         int
		initial, limit  time.Duration
		ceiling, lo, hi time.Duration
	}{
		{"first retry", 1, 500 * ms, time.Minute, 500 * ms, 250 * ms, 500 * ms},
		{"attempt 0 counts as the first", 0, 500 * ms, time.Minute, 500 * ms, 250 * ms, 500 * ms},
		{"negative attempt counts as the first", -3, 500 * ms, time.Minute, 500 * ms, 250 * ms, 500 * ms},
		{"doubles", 2, 500 * ms, time.Minute, time.Second, 500 * ms, time.Second},
		{"doubles again", 3, 500 * ms, time.Minute, 2 * time.Second, time.Second, 2 * time.Second},
		{"seventh", 7, 500 * ms, time.Minute, 32 * time.Second, 16 * time.Second, 32 * time.Second},
		{"capped", 8, 500 * ms, time.Minute, time.Minute, 30 * time.Second, time.Minute},
		{"far past the cap", 1000, 500 * ms, time.Minute, time.Minute, 30 * time.Second, time.Minute},
		{"huge limit does not overflow", 200, time.Second, math64, math64, math64 / 2, math64},
		{"initial above the limit", 1, 2 * time.Minute, time.Minute, time.Minute, 30 * time.Second, time.Minute},
		{"odd nanoseconds keep both ends", 1, 3, time.Second, 3, 1, 3},
		{"zero initial", 5, 0, time.Minute, 0, 0, 0},
		{"negative initial", 5, -time.Second, time.Minute, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ceiling(tc.attempt, tc.initial, tc.limit); got != tc.ceiling {
				t.Errorf("ceiling = %s, want %s", got, tc.ceiling)
			}
			if got := Delay(tc.attempt, tc.initial, tc.limit, fixed(false)); got != tc.lo {
				t.Errorf("Delay, lowest jitter = %s, want %s", got, tc.lo)
			}
			if got := Delay(tc.attempt, tc.initial, tc.limit, fixed(true)); got != tc.hi {
				t.Errorf("Delay, highest jitter = %s, want %s", got, tc.hi)
			}
		})
	}
}

const math64 = time.Duration(1<<63 - 1)

// A real source stays within the bounds the fixed ones pin.
func TestDelayWithARealSource(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for attempt := 1; attempt <= 10; attempt++ {
		c := ceiling(attempt, 100*time.Millisecond, 10*time.Second)
		for range 100 {
			if d := Delay(attempt, 100*time.Millisecond, 10*time.Second, r); d < c/2 || d > c {
				t.Fatalf("attempt %d: %s outside [%s, %s]", attempt, d, c/2, c)
			}
		}
	}
}

func TestShared(t *testing.T) {
	t.Parallel()
	for range 100 {
		if d := Delay(3, time.Second, time.Minute, Shared); d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("%s outside [2s, 4s]", d)
		}
	}
}
