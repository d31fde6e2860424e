package pump

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// ErrFenced is returned by Run when another pump took over the feed.
var ErrFenced = pumpdata.ErrFenced

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

// EpochRenewInterval is how often a running pump renews its fencing epoch
// (Store.RenewEpoch): a pump another one fenced takes the feed back
// only from a holder silent for several of these.
const EpochRenewInterval = 5 * time.Second

func (p *Pump) run(ctx context.Context, drainIdle func(context.Context) (bool, error)) error {
	p.draining = drainIdle != nil
	p.update(func(s *Status) { s.Running = true })
	defer p.update(func(s *Status) { s.Running = false })
	defer p.settle(ctx)
	log := p.log.WithValues("epoch", p.epoch)
	log.Info("pump started")
	ctx, cancel := context.WithCancelCause(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		_ = p.restart(WhereEpochRenew).Run(ctx, func(ctx context.Context) error {
			p.renewEpoch(ctx, cancel)
			return nil
		})
	}()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_ = p.restart(WhereDatabaseWatch).Run(ctx, func(ctx context.Context) error {
			p.watchDatabase(ctx)
			return nil
		})
	}()
	defer func() {
		cancel(nil)
		<-renewed
		<-watched
	}()

	// Results committed before a crash are written back first, and the
	// first requests go out before the first mailbox row is processed.
	p.retryBackfills(ctx)
	p.runJobs(ctx)

	for {
		if ctx.Err() != nil {
			if cause := context.Cause(ctx); errors.Is(cause, pumpdata.ErrFenced) {
				log.Info("pump fenced: another pump holds the feed", "error", cause.Error())
				return cause
			}
			log.Info("pump stopped")
			return nil
		}
		worked, wait, err := p.step(ctx)
		if errors.Is(err, pumpdata.ErrFenced) {
			log.Info("pump fenced: another pump holds the feed", "error", err.Error())
			return err
		}
		if worked {
			continue
		}
		if drainIdle != nil {
			done, err := p.drained(ctx, drainIdle)
			if err != nil && ctx.Err() == nil {
				log.Error(err, "drain check")
			} else if done {
				log.Info("pump drained")
				return nil
			}
		}
		p.sleep(ctx, wait)
	}
}

// renewEpoch renews the pump's fencing epoch every EpochRenewInterval
// while ctx lasts, beside the batches (a head blocked with a long backoff
// still says its pump is alive); it cancels ctx with the cause when another
// pump took the epoch. A failed renewal is only logged: the database's
// outage shows in the batches.
func (p *Pump) renewEpoch(ctx context.Context, cancel context.CancelCauseFunc) {
	t := p.clock.NewTicker(EpochRenewInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		failpoint.Panic(failpoint.EpochRenew)
		err := p.store.RenewEpoch(ctx, p.epoch)
		switch {
		case errors.Is(err, pumpdata.ErrFenced):
			cancel(err)
			return
		case err != nil && ctx.Err() == nil:
			p.log.Error(err, "renew the fencing epoch (ignored)")
		}
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
//
// While a batch is applied, the next one is read ahead (see readAhead).
// The read-ahead is used only when the batch was applied whole; after a
// partial, blocked or failed batch it is dropped and the head read again,
// so the FIFO order is the same as reading the head after every commit.
func (p *Pump) step(ctx context.Context) (worked bool, wait time.Duration, err error) {
	poll := p.feed.Spec.Mailbox.PollInterval.Duration
	next := p.ahead
	p.ahead = nil
	if next != nil {
		<-next.done
		if next.err == nil && len(next.rows) == 0 {
			// Nothing fitted beside the batch just applied (or the head
			// held nothing more): read afresh.
			if next.wroteBack {
				p.mailboxAnswered(true)
			}
			next = nil
		}
	}
	if next == nil {
		next = p.readAhead(ctx, nil, true)
	}
	<-next.done
	if err := next.err; err != nil {
		if ctx.Err() != nil {
			p.takeBack(next)
			return false, 0, nil
		}
		if next.panicked {
			// Logged and counted; the head is read afresh after the
			// backoff, so no row is skipped and the order stays FIFO.
			p.takeBack(next)
			p.infraAttempts++
			return false, p.backoff(), nil
		}
		// A failed write-back leaves its rows at the head; reading them
		// again would only redo the write-back in a tight loop, so a
		// failed write-back waits like a failed head read.
		p.mailboxFailed(err, next.writeBackErr)
		p.infraAttempts++
		return false, p.backoff(), nil
	}
	p.mailboxAnswered(next.wroteBack)
	if len(next.rows) == 0 {
		if err := p.flushBackfill(ctx); err != nil {
			p.infraAttempts++
			return false, p.backoff(), nil
		}
		p.infraAttempts = 0
		p.update(func(s *Status) { s.HeadID, s.HeadBlockedSince, s.HeadLastError = 0, time.Time{}, "" })
		now := p.clock.Now()
		wait := p.emptyWait(poll, now)
		if now.Sub(p.lastJobs) < time.Second {
			// The chores below run once a second, as between batches,
			// however often the head is read: an idle feed would
			// otherwise query both databases at every poll.
			// This fresh read found the head empty: nothing is queued.
			p.update(func(s *Status) { s.QueueDepth, s.Lag = 0, 0 })
			return false, wait, nil
		}
		p.lastJobs = now
		p.retryBackfills(ctx)
		p.runJobs(ctx)
		if err := p.runReplays(ctx); err != nil {
			return false, 0, err
		}
		// No depth query: it counts the rows the head read just found
		// none of (the same condition).
		p.update(func(s *Status) { s.QueueDepth, s.Lag = 0, 0 })
		return false, wait, nil
	}
	p.emptyReads, p.emptyWaited, p.emptySince = 0, 0, time.Time{}
	// A read that took every row the head held (a steady stream's batch
	// of one) has nothing to read ahead: only the write-back of the
	// results so far runs beside the batch, and the head is read again
	// after it, as after a read ahead that found nothing.
	p.ahead = p.readAhead(ctx, next.rows, next.more)
	out := p.processBatch(ctx, next.rows, next.batch)
	if out.err != nil || out.blocked || !out.whole {
		p.dropAhead()
	}
	if out.err != nil {
		return false, 0, out.err
	}
	if out.blocked {
		return false, out.wait, nil
	}
	p.refreshDepthEvery(ctx)
	// Requests, lifecycle jobs and replays are due on schedule even while
	// the head never empties; they share the FIFO between batches.
	if now := p.clock.Now(); now.Sub(p.lastJobs) >= time.Second {
		p.lastJobs = now
		p.runJobs(ctx)
		if err := p.runReplays(ctx); err != nil {
			p.dropAhead()
			return false, 0, err
		}
	}
	return true, 0, nil
}

// emptyWait is how long to wait after an empty head read at now. While
// rows keep arriving the head is read again soon — every pollInterval/16
// (at least a millisecond) after a batch — so a message that arrives just
// after a read waits a few milliseconds, not a whole pollInterval; once the
// head has stayed empty for about one pollInterval (the waits add up to it)
// the wait is pollInterval, and once it has stayed empty for idleAfter it
// is mailbox.idlePollInterval, until the next batch: an idle feed reads its
// mailbox a few times a second at most. (The step does not grow: at a
// steady 50 msg/s the next row comes 15 ms or so after a batch's commit,
// and a step of pollInterval/8 after the first — 12.5 ms at the default
// 100ms — made the poll wait the largest part of the latency's 99th
// percentile. The shorter step costs an empty read or so more per message
// at that rate, about 16 reads instead of 8 after a lone message, and
// nothing once the feed is idle.)
func (p *Pump) emptyWait(poll time.Duration, now time.Time) time.Duration {
	if p.emptySince.IsZero() {
		p.emptySince = now
	}
	if p.emptyReads < 0 {
		if !p.draining && p.idlePoll > poll && now.Sub(p.emptySince) >= idleAfter {
			return p.idlePoll
		}
		return poll
	}
	step := max(poll/16, time.Millisecond)
	p.emptyReads++
	if p.emptyWaited+step >= poll {
		p.emptyReads, p.emptyWaited = -1, 0
		return poll
	}
	p.emptyWaited += step
	return step
}

// idleAfter is how long the head stays empty before the pump reads it
// every mailbox.idlePollInterval instead of every pollInterval. A feed with
// traffic never stays empty this long, so its latency is pollInterval's.
const idleAfter = 10 * time.Second

// reading is a head read in progress; rows, batch and err are set when
// done is closed.
type reading struct {
	done  chan struct{}
	rows  []pumpdata.Row
	batch decodedBatch
	// more: the head may hold rows this read did not take (Inbox.Head).
	more bool
	// wroteBack: results were written back before the read; writeBackErr:
	// that write-back failed (err is set, nothing was read).
	wroteBack, writeBackErr bool
	err                     error
	// panicked: the read-ahead panicked (err is the *panics.Error, rows
	// are empty); unwritten are the results it took to write back and did
	// not, which the loop takes back (takeBack).
	panicked  bool
	unwritten []pumpdata.Backfill
}

// readAhead starts reading the next batch while the rows in applying are
// applied: it writes back the results committed so far (so their rows
// leave the head), reads up to batchSize rows of the head without the rows
// being applied, and decodes them. Decoding is pure and the mailbox is not
// the database, so this overlaps the transaction of the current batch.
// Without read, only the write-back runs: the read that gave applying
// took every row the head held, and a row that arrives while it is applied
// is read by the step after it, as before (at a steady 50 msg/s the read
// ahead of a batch of one found a row 4 times in 949: a head read of the
// 3.4 a message cost, for nothing).
func (p *Pump) readAhead(ctx context.Context, applying []pumpdata.Row, read bool) *reading {
	backfill := p.pending
	p.pending = nil
	if !read && len(backfill) == 0 {
		r := &reading{done: make(chan struct{})}
		close(r.done)
		return r
	}
	limit, maxBytes := p.batchSize, p.feed.Spec.Mailbox.MaxMessageBytes
	// Bodies in memory at once, the batch being applied included, stay
	// within mailbox.maxBatchBytes (a fresh read always takes one row).
	budget := p.feed.Spec.Mailbox.MaxBatchBytes
	var skip map[int64]bool
	if len(applying) > 0 {
		skip = make(map[int64]bool, len(applying))
		for _, r := range applying {
			skip[r.ID] = true
			budget -= min(r.Size, maxBytes)
		}
		// The read-ahead is used only if the batch applies whole, which
		// doubles the batch size (processBatch).
		limit = min(2*limit, int(p.feed.Spec.Mailbox.BatchSize))
	}
	r := &reading{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		// A panic here (a bug of the mailbox adapter or the decoder
		// outside one message) must not end the process: the reading
		// fails as a whole, nothing of it is used, and the loop reads the
		// head afresh after a backoff — the head, not this goroutine, is
		// the state a restart resumes from.
		defer func() {
			if v := recover(); v != nil {
				r.rows, r.batch = nil, decodedBatch{}
				r.err, r.panicked = p.loopPanicked(WhereReadAhead, v), true
				if !r.wroteBack {
					r.unwritten = backfill
				}
			}
		}()
		failpoint.Panic(failpoint.ReadAhead)
		if len(backfill) > 0 {
			err := p.backfill(ctx, backfill)
			// The intents left are counted at most once a second while
			// batches flow (a statement per batch otherwise), at once when
			// the write-back failed, and by the chores of an empty head.
			if p.onceASecond(&p.lastBackfillCount) || err != nil {
				p.setBackfillPending(ctx)
			}
			if err != nil {
				// The intents stay committed; the rows stay at the head.
				r.err, r.writeBackErr = err, true
				return
			}
			r.wroteBack = true
		}
		if !read {
			return
		}
		rows, more, err := p.mbox.Head(ctx, limit, max(budget, 0), maxBytes, skip)
		if err != nil || len(rows) == 0 {
			r.err = err
			return
		}
		collectAfterLargeRead(rows)
		r.rows, r.batch, r.more = rows, p.decodeBatch(rows), more
	}()
	return r
}

// collectAfterLargeRead runs a garbage collection once rows holding a body
// of deferRecordsFrom bytes or more are read. The MySQL driver reads such a
// body through packet buffers and a joined copy, about three times its size,
// which are garbage as soon as the rows are scanned; a collection that
// happened to mark while they were live would let the heap grow to twice
// all of that before the next one (a full-day DNLD: 100 MB more at peak).
// Collected now, the heap's next goal follows from what stays: the bodies.
func collectAfterLargeRead(rows []pumpdata.Row) {
	for _, r := range rows {
		if len(r.Body) >= deferRecordsFrom {
			runtime.GC()
			return
		}
	}
}

// dropAhead waits for the read-ahead and forgets its rows (its write-back
// is done and stays done).
func (p *Pump) dropAhead() {
	if p.ahead != nil {
		<-p.ahead.done
		p.takeBack(p.ahead)
		p.ahead = nil
	}
}

// takeBack returns to the results to write back those a read-ahead took
// and did not write because it panicked (written again if in doubt: a
// write-back is idempotent).
func (p *Pump) takeBack(r *reading) {
	if len(r.unwritten) > 0 {
		p.pending = append(r.unwritten, p.pending...)
		r.unwritten = nil
	}
}

// flushBackfill writes back the results committed since the last read.
// A failure is reported (mailboxFailed) and returned; the intents stay.
func (p *Pump) flushBackfill(ctx context.Context) error {
	if len(p.pending) == 0 {
		return nil
	}
	backfill := p.pending
	p.pending = nil
	err := p.backfill(ctx, backfill)
	if err != nil {
		p.mailboxFailed(err, true)
	} else {
		p.mailboxAnswered(true)
	}
	p.setBackfillPending(ctx)
	return err
}

// settle ends the loop's work in flight when the pump stops: the
// read-ahead is awaited and committed results are written back, with a
// short deadline of their own (a stop request must not strand them; a
// failure leaves the intents for the next start).
func (p *Pump) settle(ctx context.Context) {
	p.dropAhead()
	if len(p.pending) == 0 {
		return
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	_ = p.flushBackfill(bctx) // reported; the intents wait for the next start
}

// settleTimeout bounds the write-back when the pump stops.
const settleTimeout = 5 * time.Second

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
	if p.onceASecond(&p.lastDepth) {
		p.refreshDepth(ctx)
	}
}

// onceASecond reports whether a second has passed since *last, and if so
// sets *last to now: the pace of the figures refreshed while batches flow.
func (p *Pump) onceASecond(last *time.Time) bool {
	now := p.clock.Now()
	if now.Sub(*last) < time.Second {
		return false
	}
	*last = now
	return true
}

// retryBackfills writes committed results that are not yet in the mailbox.
func (p *Pump) retryBackfills(ctx context.Context) {
	for {
		pending, left, err := p.store.Backfills(ctx, 500)
		if err != nil {
			p.setBackfillPending(ctx)
			return
		}
		if len(pending) == 0 {
			p.update(func(s *Status) { s.BackfillPending = left })
			return
		}
		if err := p.backfill(ctx, pending); err != nil {
			p.mailboxFailed(err, true)
			return
		}
		p.mailboxAnswered(true)
		if len(pending) < 500 {
			p.setBackfillPending(ctx)
			return
		}
	}
}

func (p *Pump) setBackfillPending(ctx context.Context) {
	if _, n, err := p.store.Backfills(ctx, 0); err == nil {
		p.update(func(s *Status) { s.BackfillPending = n })
	}
}

// backfill writes results to the mailbox and clears their intents. A
// failure leaves the intents for the next try; it never changes the
// committed result.
func (p *Pump) backfill(ctx context.Context, results []pumpdata.Backfill) error {
	ids := make([]int64, len(results))
	for i, r := range results {
		ids[i] = r.MessageID
	}
	if err := p.mbox.Backfill(ctx, results); err != nil {
		if ferr := p.store.SettleBackfills(ctx, ids, err); ferr != nil {
			p.log.Error(ferr, "note backfill failure")
		}
		return fmt.Errorf("write %d results back (intents kept for retry): %w", len(results), err)
	}
	failpoint.Hit(failpoint.AfterWriteBack)
	if err := p.store.SettleBackfills(ctx, ids, nil); err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	return nil
}
