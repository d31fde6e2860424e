package dispatch

import "time"

// backoff is the wait before retry number attempt (1 for the first retry):
// initial doubled per attempt up to limit, of which the upper half is
// jitter (jitter in [0, 1)), so many dispatchers do not retry in step.
func backoff(attempt int, initial, limit time.Duration, jitter float64) time.Duration {
	d := initial
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	half := d / 2
	return half + time.Duration(jitter*float64(d-half))
}
