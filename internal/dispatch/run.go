package dispatch

import (
	"context"
	"time"

	"github.com/flightfeed/flightfeed/internal/backoff"
)

// Run delivers until ctx ends, then returns nil. It runs passes at once
// (events left by an earlier process) until one finds nothing, and again
// whenever Notify is called or the periodic scan ticks. A failed pass —
// broker down, topic missing, authorization, database — is retried after a
// backoff with jitter, forever; it is reported in Status, never returned.
func (d *Dispatcher) Run(ctx context.Context) error {
	log := d.log.WithValues("state_topic", d.topics.State, "notice_topic", d.topics.Notice)
	log.Info("dispatcher started")
	defer log.Info("dispatcher stopped")
	scan := d.clock.NewTicker(d.opts.ScanInterval)
	defer scan.Stop()
	failures := 0
	for ctx.Err() == nil {
		d.passMu.Lock()
		_, worked, err := d.pass(ctx)
		d.passMu.Unlock()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			failures++
			wait := backoff.Delay(failures, d.opts.BackoffInitial, d.opts.BackoffMax, d.rand)
			log.Error(err, "delivery failed; retrying", "attempt", failures, "backoff", wait.String(),
				"reason", string(classify(err)))
			d.sleep(ctx, wait)
			continue
		}
		if failures > 0 {
			log.Info("delivery recovered", "after_failures", failures)
			failures = 0
		}
		if worked {
			continue
		}
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-scan.C():
		}
	}
	return nil
}

// sleep waits d or until ctx ends. Notify does not cut a backoff short: a
// failing broker is not retried at the pump's commit rate.
func (d *Dispatcher) sleep(ctx context.Context, wait time.Duration) {
	t := d.clock.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}
