package pump

import (
	"context"
	"errors"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// sweepBatch bounds one history transaction.
const sweepBatch = 500

// runJobs runs the requests state machine, the reference-data requests
// and, when due, the lifecycle jobs (processing rules R8), on the pump's FIFO
// between batches. Failures are logged and retried on the next round; they
// never block messages.
func (p *Pump) runJobs(ctx context.Context) {
	if err := p.reqs.tick(ctx); err != nil && ctx.Err() == nil {
		p.log.Error(err, "requests")
	}
	if err := p.refs.tick(ctx); err != nil && ctx.Err() == nil {
		p.log.Error(err, "reference-data requests")
	}
	now := p.clock.Now()
	if now.Before(p.nextJobs) {
		return
	}
	p.nextJobs = now.Add(p.feed.Spec.History.SweepInterval.Duration)
	if err := p.lifecycle(ctx, now); err != nil && ctx.Err() == nil {
		if errors.Is(err, pumpdata.ErrFenced) {
			return
		}
		p.log.Error(err, "lifecycle jobs")
	}
}

func (p *Pump) lifecycle(ctx context.Context, now time.Time) error {
	spec := p.feed.Spec
	meta := engine.Meta{Type: engine.TypeJob, Styp: "HISTORY_SWEEP"}
	if !spec.History.Disabled {
		h := spec.History
		cut := pumpdata.HistoryCutoffs{
			Scheduled: now.Add(-h.ScheduledAge.Duration), Cancelled: now.Add(-h.CancelledAge.Duration),
			Departed: now.Add(-h.DepartedAge.Duration), Arrived: now.Add(-h.ArrivedAge.Duration),
			Zone: spec.Airport.TimeZone, Plausible: h.PlausibleWindow.Duration,
		}
		if err := p.sweep(ctx, func(tx Tx) (Swept, error) { return tx.Sweep(ctx, meta, Job{History: &cut, Limit: sweepBatch}) }); err != nil {
			return err
		}
	}
	if days := spec.Retention.NullDayDays; days != nil && *days > 0 {
		before := now.AddDate(0, 0, -int(*days))
		meta.Styp = "NULL_DAY_RETENTION"
		if err := p.sweep(ctx, func(tx Tx) (Swept, error) { return tx.Sweep(ctx, meta, Job{NullDayBefore: before, Limit: sweepBatch}) }); err != nil {
			return err
		}
	}
	if days := *spec.Retention.LedgerDays; days > 0 {
		cutoff := now.In(p.feed.Location).AddDate(0, 0, -int(days)).Format(time.DateOnly)
		if err := p.inTx(ctx, func(tx Tx) error {
			pruned, err := tx.Sweep(ctx, meta, Job{LedgerBefore: cutoff})
			if len(pruned.Days) > 0 {
				p.log.Info("ledger retention", "days", pruned.Days)
			}
			return err
		}); err != nil {
			return err
		}
	}
	r := spec.Retention
	_, err := p.store.Prune(ctx, now.AddDate(0, 0, -int(r.TraceLogDays)), now.AddDate(0, 0, -int(r.ArchiveDays)),
		now.AddDate(0, 0, -int(r.DeliveredEventDays)))
	return err
}

// sweep repeats one history job in fenced transactions until it finds
// fewer than a batch.
func (p *Pump) sweep(ctx context.Context, job func(Tx) (Swept, error)) error {
	for {
		var n int
		if err := p.inTx(ctx, func(tx Tx) error {
			swept, err := job(tx)
			n = swept.Flights
			return err
		}); err != nil {
			return err
		}
		if n > 0 {
			p.log.Info("moved flights to history", "flights", n)
			if p.opts.Notify != nil {
				p.opts.Notify()
			}
		}
		if n < sweepBatch {
			return nil
		}
	}
}

func (p *Pump) inTx(ctx context.Context, fn func(Tx) error) error {
	tx, err := p.store.Begin(ctx, p.epoch)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
