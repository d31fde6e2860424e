package backoff

import (
	"math/rand/v2"
	"time"
)

// Rand is the source of jitter; *math/rand/v2.Rand satisfies it.
type Rand interface {
	// Int64N returns a number in [0, n); n > 0.
	Int64N(n int64) int64
}

// ceiling is the longest wait before retry number attempt (1 for the first
// retry): min(limit, initial·2^(attempt-1)). An attempt below 1 counts as 1
// and a negative duration as 0.
func ceiling(attempt int, initial, limit time.Duration) time.Duration {
	d := max(initial, 0)
	for i := 1; i < attempt && 0 < d && d < limit; i++ {
		if d > limit/2 {
			// Doubling would pass the limit (and could overflow).
			d = limit
			break
		}
		d *= 2
	}
	return max(min(d, limit), 0)
}

// Delay is the wait before retry number attempt: ceiling(attempt, initial,
// limit) = c, of which the upper half is jitter drawn from r, so the result
// lies in [c/2, c].
func Delay(attempt int, initial, limit time.Duration, r Rand) time.Duration {
	c := ceiling(attempt, initial, limit)
	half := c / 2
	return half + time.Duration(r.Int64N(int64(c-half)+1))
}

// Shared draws from math/rand/v2's global source, which is safe for
// concurrent use: for callers that keep no source of their own.
var Shared Rand = shared{}

type shared struct{}

func (shared) Int64N(n int64) int64 { return rand.Int64N(n) } //nolint:gosec // jitter only
