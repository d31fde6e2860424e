package pump

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightfeed/flightfeed/internal/store"
)

// ErrFenced is returned by Run when another pump took over the feed.
var ErrFenced = store.ErrFenced

// Run pumps until ctx is cancelled (returns nil), the pump is fenced
// (returns ErrFenced), or, with drain, until the mailbox is drained and the
// extra idle condition holds (returns nil). A transaction in flight when ctx
// ends is rolled back, never half-applied.
func (p *Pump) Run(ctx context.Context) error {
	return p.run(ctx, nil)
}

// Drain is Run that returns nil as soon as every mailbox row is processed
// and backfilled and idle (when given) reports true — the dispatcher's
// outbox being delivered, for `flightfeed pump --drain`.
func (p *Pump) Drain(ctx context.Context, idle func(context.Context) (bool, error)) error {
	if idle == nil {
		idle = func(context.Context) (bool, error) { return true, nil }
	}
	return p.run(ctx, idle)
}

func (p *Pump) run(ctx context.Context, drainIdle func(context.Context) (bool, error)) error {
	p.update(func(s *Status) { s.Running = true })
	defer p.update(func(s *Status) { s.Running = false })
	log := p.log.WithValues("epoch", p.epoch)
	log.Info("pump started")

	// Results committed before a crash are written back first, and the
	// first requests go out before the first mailbox row is processed.
	p.retryBackfills(ctx)
	p.runJobs(ctx)

	for {
		if ctx.Err() != nil {
			log.Info("pump stopped")
			return nil
		}
		worked, wait, err := p.step(ctx)
		if errors.Is(err, store.ErrFenced) {
			log.Info("pump fenced: another pump holds the feed", "error", err.Error())
			return err
		}
		if worked {
			continue
		}
		if drainIdle != nil {
			done, err := p.drained(ctx, drainIdle)
			if err != nil {
				log.Error(err, "drain check")
			} else if done {
				log.Info("pump drained")
				return nil
			}
		}
		p.sleep(ctx, wait)
	}
}

func (p *Pump) drained(ctx context.Context, idle func(context.Context) (bool, error)) (bool, error) {
	ok, err := p.Drained(ctx)
	if err != nil || !ok {
		return false, err
	}
	return idle(ctx)
}

// step processes one batch from the head, or runs the due jobs when the
// head is empty. worked means "go again at once"; otherwise wait.
func (p *Pump) step(ctx context.Context) (worked bool, wait time.Duration, err error) {
	poll := p.feed.Spec.Mailbox.PollInterval.Duration
	rows, err := p.mbox.Head(ctx, p.batchSize, p.opts.BodyBudget, p.feed.Spec.Mailbox.MaxMessageBytes)
	if err != nil {
		if ctx.Err() != nil {
			return false, 0, nil
		}
		p.update(func(s *Status) { s.MailboxReachable, s.MailboxError = false, err.Error() })
		p.infraAttempts++
		return false, p.backoff(), nil
	}
	p.update(func(s *Status) { s.MailboxReachable, s.MailboxError = true, "" })
	if len(rows) == 0 {
		p.infraAttempts = 0
		p.update(func(s *Status) { s.HeadID, s.HeadBlockedSince, s.HeadLastError = 0, time.Time{}, "" })
		p.retryBackfills(ctx)
		p.runJobs(ctx)
		p.refreshDepth(ctx)
		return false, poll, nil
	}
	out := p.processBatch(ctx, rows)
	if out.err != nil {
		return false, 0, out.err
	}
	if out.blocked {
		return false, out.wait, nil
	}
	p.refreshDepthEvery(ctx)
	// Requests and lifecycle jobs are due on schedule even while the head
	// never empties; they share the FIFO between batches.
	if now := p.clock.Now(); now.Sub(p.lastJobs) >= time.Second {
		p.lastJobs = now
		p.runJobs(ctx)
	}
	return true, 0, nil
}

func (p *Pump) backoff() time.Duration {
	spec := p.feed.Spec.Pump
	return Backoff(p.infraAttempts, spec.BackoffInitial.Duration, spec.BackoffMax.Duration, p.rand)
}

func (p *Pump) sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := p.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

// refreshDepth updates queue depth and lag (one cheap query).
func (p *Pump) refreshDepth(ctx context.Context) {
	depth, oldest, err := p.mbox.Depth(ctx)
	if err != nil {
		return
	}
	now := p.clock.Now()
	p.update(func(s *Status) {
		s.QueueDepth = depth
		s.Lag = 0
		if depth > 0 && !oldest.IsZero() && now.After(oldest) {
			s.Lag = now.Sub(oldest)
		}
	})
}

// refreshDepthEvery refreshes depth at most once a second while busy.
func (p *Pump) refreshDepthEvery(ctx context.Context) {
	now := p.clock.Now()
	if now.Sub(p.lastDepth) < time.Second {
		return
	}
	p.lastDepth = now
	p.refreshDepth(ctx)
}

// retryBackfills writes committed results that are not yet in the mailbox.
func (p *Pump) retryBackfills(ctx context.Context) {
	for {
		pending, err := p.store.PendingBackfills(ctx, 500)
		if err != nil || len(pending) == 0 {
			p.setBackfillPending(ctx)
			return
		}
		if err := p.backfill(ctx, pending); err != nil {
			p.log.Error(err, "backfill retry")
			return
		}
		if len(pending) < 500 {
			p.setBackfillPending(ctx)
			return
		}
	}
}

func (p *Pump) setBackfillPending(ctx context.Context) {
	if n, err := p.store.CountBackfills(ctx); err == nil {
		p.update(func(s *Status) { s.BackfillPending = n })
	}
}

// backfill writes results to the mailbox and clears their intents. A
// failure leaves the intents for the next try; it never changes the
// committed result.
func (p *Pump) backfill(ctx context.Context, results []store.Backfill) error {
	rows := make([]mailboxResult, len(results))
	ids := make([]int64, len(results))
	for i, r := range results {
		rows[i] = mailboxResult{ID: r.MessageID, Result: r.Result, Note: r.Note, Processed: r.Processed}
		ids[i] = r.MessageID
	}
	if err := p.mbox.Backfill(ctx, rows); err != nil {
		if ferr := p.store.BackfillFailed(ctx, ids, err); ferr != nil {
			p.log.Error(ferr, "note backfill failure")
		}
		p.update(func(s *Status) { s.MailboxReachable, s.MailboxError = false, err.Error() })
		return fmt.Errorf("backfill: %w", err)
	}
	if err := p.store.BackfillDone(ctx, ids); err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	return nil
}
