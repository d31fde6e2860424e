package dispatch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/panics"
	"github.com/flightfeed/flightfeed/internal/store"
)

// maxAhead bounds the rows a dispatcher remembers as done above the
// cursor and leaves out of its reads: while a record fails at the cursor
// (a state topic missing, say), the rows after it go on being delivered
// until this many are; then the window stays at the cursor until the
// failing record goes through.
const maxAhead = 50_000

// markTimeout bounds the statements that record a pass's outcome.
const markTimeout = 30 * time.Second

// WhereOutboxFlush names the goroutine that flushes a pass and records the
// broker's answers in flightfeed_pump_panics_total.
const WhereOutboxFlush = "outbox-flush"

// errHeldBack marks a record not produced because an earlier record of the
// same topic and key failed first in its pass: sending it would let the
// broker acknowledge a newer record of a flight before an older one.
var errHeldBack = errors.New("held back behind a failed record of the same flight")

// errUnacknowledged reports a pass whose records the broker has not
// answered for longer than Options.StallAfter.
var errUnacknowledged = errors.New("records sent but not acknowledged")

// ErrFenced means a newer leader of the feed took over: its producer
// fenced this one at the broker (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH),
// or its fencing epoch superseded this dispatcher's in the database. The
// dispatcher stops for good; it wraps store.ErrFenced, so a runner treats
// it like a fenced pump.
var ErrFenced = fmt.Errorf("dispatcher fenced by a newer leader of the feed: %w", store.ErrFenced)

// ErrProducerFailed means the broker refused the transactional producer
// for good (for instance TRANSACTIONAL_ID_AUTHORIZATION_FAILED): the client
// cannot recover, so the dispatcher stops and its feed must be restarted
// with a new producer.
var ErrProducerFailed = errors.New("kafka producer failed for good")

// kafkaFenced reports a broker's answer that a newer producer of the
// transactional id took over.
func kafkaFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// producerGone reports an error after which the transactional client can
// never produce again: fenced, or refused with a non-retriable error.
func (d *Dispatcher) producerGone(err error) error {
	if kafkaFenced(err) || errors.Is(err, store.ErrFenced) {
		return fmt.Errorf("%w: %w", ErrFenced, err)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable {
		return fmt.Errorf("%w: %w", ErrProducerFailed, err)
	}
	return nil
}

// outcome is what one pass did.
type outcome struct {
	delivered  int
	superseded int64
	// err is the first delivery failure, or a failure to record the result.
	err error
	// suspects: records refused for good wait to be sent alone.
	suspects bool
}

// DeliverOnce runs one pass: it reads up to Options.BatchSize pending
// events (coalesced), publishes their records, waits for the broker's
// answers and marks the acknowledged events delivered (superseding older
// state events of their FLIDs) and the others failed. It returns the number
// of records acknowledged and the first failure. When ctx ends before the
// broker answered, the pass finishes recording in the background and the
// next pass waits for it.
func (d *Dispatcher) DeliverOnce(ctx context.Context) (int, error) {
	d.passMu.Lock()
	defer d.passMu.Unlock()
	n, _, _, err := d.pass(ctx, d.opts.BatchSize)
	return n, err
}

// pass is DeliverOnce under passMu; again reports that more events may
// be PENDING than the pass took — its window was full, or suspects wait to
// be sent alone — so Run goes again at once. Events committed after the
// pass read its window come with a Notify, which wakes Run anyway: a pass
// that took everything is not followed by an empty one (a statement per
// pump commit saved during a backlog). size bounds the pass's records (Run
// grows it during a backlog, passSize); grow reports a pass whose window was
// full and whose every record was delivered, so the next may be larger.
func (d *Dispatcher) pass(ctx context.Context, size int) (delivered int, again, grow bool, err error) {
	d.inPass.Store(true)
	defer d.inPass.Store(false)
	delivered, again, grow, err = d.deliverPass(ctx, size)
	d.more.Store(again || err != nil)
	return delivered, again, grow, err
}

// deliverPass is pass without the bookkeeping Idle reads.
func (d *Dispatcher) deliverPass(ctx context.Context, size int) (delivered int, again, grow bool, err error) {
	select {
	case <-d.prev:
	case <-ctx.Done():
		return 0, false, false, ctx.Err()
	}
	if err := d.stoppedErr(); err != nil {
		return 0, false, false, err
	}
	var tm passTimes
	tm.start = d.clock.Now()
	if d.txnOpen {
		// The previous pass could not end its transaction: abort it
		// before a new one begins.
		if err := d.client.EndTransaction(ctx, kgo.TryAbort); err != nil {
			if gone := d.producerGone(err); gone != nil {
				d.stop(gone)
				return 0, false, false, d.stoppedErr()
			}
			err = fmt.Errorf("abort the previous pass's transaction: %w", err)
			d.recordFailure(err)
			return 0, false, false, err
		}
		d.txnOpen = false
	}
	var skip []int64
	if len(d.aheadRows) <= maxAhead {
		skip = slices.Collect(maps.Keys(d.aheadRows))
	}
	// size bounds the records of a pass; a row holds up to two (its notice
	// and its state), so the window takes half as many rows, and the
	// records beyond the bound wait for the next pass.
	win, err := d.store.ReadWindow(ctx, (size+1)/2, skip)
	if err != nil {
		if ctx.Err() != nil {
			return 0, false, false, ctx.Err()
		}
		err = fmt.Errorf("%w: %w", errDatabase, err)
		d.recordFailure(err)
		return 0, false, false, err
	}
	tm.read = d.clock.Now()
	for k := range d.ahead {
		if k.ID <= win.Cursor {
			delete(d.ahead, k)
		}
	}
	for id := range d.aheadRows {
		if id <= win.Cursor {
			delete(d.aheadRows, id)
		}
	}
	full, window := win.Full, win.Events
	if len(window) == 0 && len(d.ahead) == 0 {
		// Nothing is pending: the read returns at least one event whenever
		// any row is above the cursor and not done.
		d.mu.Lock()
		parked := d.status.Parked
		d.mu.Unlock()
		d.setStats(0, parked, time.Time{})
		d.recordSuccess()
		return 0, false, false, nil
	}
	// Events done before (parked, or delivered above the cursor by an
	// earlier pass) are not sent again; they only let the cursor pass.
	events := make([]store.OutboxEvent, 0, len(window))
	for _, e := range window {
		if _, done := d.ahead[e.Key()]; !done && !e.Parked {
			events = append(events, e)
		}
	}
	if len(events) > size {
		events, full = events[:size], true
	}
	// After a pass saw records refused for good, the next ones isolate
	// them: one event per pass, alone in its batch, until each suspect is
	// delivered or parked.
	solo := false
	if ev, ok := d.isolate(events); ok {
		events, solo = []store.OutboxEvent{ev}, true
		d.log.V(1).Info("sending a suspect record alone", "flid", ev.FLID.String(), "msg_id", ev.MessageID,
			"kind", ev.Kind, "state_version", ev.StateVersion)
	}

	if d.beforeProduce != nil && len(events) > 0 {
		d.beforeProduce(ctx, events)
	}
	began := d.txn && len(events) > 0
	if began {
		if err := d.client.BeginTransaction(); err != nil {
			// The previous transaction is ended (txnOpen), so franz-go
			// refuses to begin only when the producer failed for good.
			err = fmt.Errorf("begin a transaction: %w", err)
			gone := d.producerGone(err)
			if gone == nil {
				gone = fmt.Errorf("%w: %w", ErrProducerFailed, err)
			}
			d.stop(gone)
			return 0, false, false, d.stoppedErr()
		}
		d.txnOpen = true
	}

	results := make([]error, len(events))
	var wg sync.WaitGroup
	held := newHeldKeys()
	produced := 0
	for i := range events {
		rec, err := Record(events[i], d.topics)
		if err != nil {
			results[i] = err
			continue
		}
		key := rec.Topic + "\x00" + string(rec.Key)
		if held.has(key) {
			results[i] = errHeldBack
			continue
		}
		wg.Add(1)
		produced++
		d.client.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				held.add(key)
			}
			results[i] = err // read only after wg.Wait
			wg.Done()
		})
	}
	d.setInflight(produced)
	tm.produced = d.clock.Now()

	settled := make(chan outcome, 1)
	done := make(chan struct{})
	d.prev = done
	go func() {
		defer close(done)
		// A panic here must not end the process, nor leave the pass
		// waiting for an answer that never comes: the pass fails, and Run
		// retries after its backoff. Nothing is marked, so the events stay
		// PENDING and go again in order (records the broker acknowledged
		// are sent again at the same version, a duplicate never a loss);
		// a transaction left open is aborted before the next one begins
		// (txnOpen).
		defer func() {
			if v := recover(); v != nil {
				e := &panics.Error{Value: v, Stack: debug.Stack()}
				d.log.Error(e, "panic while flushing a pass (a FlightFeed bug); the pass is retried after a backoff",
					"where", WhereOutboxFlush, "stack", string(e.Stack))
				if d.opts.Panicked != nil {
					d.opts.Panicked(WhereOutboxFlush)
				}
				d.setInflight(0)
				d.recordFailure(fmt.Errorf("flush the pass: %w", e))
				settled <- outcome{err: fmt.Errorf("flush the pass: %w", e)}
			}
		}()
		// Manual flushing: nothing was sent before this call, so a failure
		// of one record fails every later record of its partition too
		// (franz-go keeps a partition gapless), and no later record of a
		// FLID can be acknowledged ahead of an earlier failed one. Flush's
		// error only says ctx ended; the promises report each record.
		_ = d.client.Flush(ctx)
		wg.Wait()
		tm.acked = d.clock.Now()
		failpoint.Panic(failpoint.OutboxFlush)
		// A fresh context on purpose: what the broker acknowledged must be
		// recorded even when ctx ended meanwhile, or it is sent again.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
		defer cancel()
		refused := refusedForGood(results)
		if began && !d.endTransaction(mctx, results, refused) {
			d.setInflight(0)
			settled <- outcome{err: d.stoppedErr()}
			return
		}
		tm.ended = d.clock.Now()
		settled <- d.settle(mctx, win, events, results, solo, &tm)
	}()
	out := d.await(ctx, settled, produced)
	grow = full && !solo && !out.suspects && out.err == nil && out.delivered == produced && produced == len(events)
	return out.delivered, full || solo || out.suspects, grow, out.err
}

// passTimes are when a pass reached each of its steps, for the pass's log
// line (how long it read, produced, waited for the broker's answers, ended
// its transaction and recorded the outcome).
type passTimes struct {
	start, read, produced, acked, ended time.Time
}

// passSize is the size of Run's next pass after one of size: twice as
// large (at most maxBatchSize records) after a pass that grew (a backlog:
// its window was full and all of it was delivered), Options.BatchSize
// otherwise. A burst — a full-day snapshot's 20,000 records — goes in a
// few large passes instead of twenty, each with its Kafka transaction,
// window read and cursor write; a steady stream and every pass after a
// failure keep the configured size.
func (d *Dispatcher) passSize(size int, grow bool) int {
	if !grow {
		return d.opts.BatchSize
	}
	return max(d.opts.BatchSize, min(2*size, maxBatchSize))
}

// await waits for the pass to settle. Records already sent are never
// given up (that would break idempotence), so an outage can hold a pass
// here until the broker answers; meanwhile the pending count is refreshed
// and, after Options.StallAfter, Status reports the pass as failing.
func (d *Dispatcher) await(ctx context.Context, settled <-chan outcome, produced int) outcome {
	started := d.clock.Now()
	tick := d.clock.NewTicker(min(d.opts.StatsInterval, d.opts.StallAfter))
	defer tick.Stop()
	stalled := false
	for {
		select {
		case out := <-settled:
			d.refreshStats(ctx, out.err != nil)
			return out
		case <-ctx.Done():
			return outcome{err: ctx.Err()}
		case <-tick.C():
			d.refreshStats(ctx, false)
			age := d.clock.Since(started)
			if age < d.opts.StallAfter {
				continue
			}
			err := fmt.Errorf("%w: %d records for %s", errUnacknowledged, produced, age.Round(time.Second))
			if conn := d.watch.last(); conn != nil {
				err = fmt.Errorf("%w; last broker connection: %w", err, conn)
			}
			if !stalled {
				d.log.Error(err, "waiting for the broker", "records", produced)
				stalled = true
			}
			d.recordFailure(err)
		}
	}
}

// endTransaction ends the pass's transaction by committing what the
// broker acknowledged, or aborting it when a record was refused for good
// (refused): with a failed record the transaction must not commit, and
// the records it holds are sent again, without the refused one, by the
// next passes. A record that failed was never appended (records
// already sent are never abandoned), and a failed record holds back the
// later records of its FLID, so committing the others keeps every FLID's
// versions in order, exactly as without transactions. A failed commit is
// aborted as franz-go documents it, and its acknowledged records count as
// failed attempts. It returns false when the producer was fenced or failed
// for good: the dispatcher has stopped, and nothing is marked.
func (d *Dispatcher) endTransaction(ctx context.Context, results []error, refused bool) bool {
	for _, err := range results {
		if kafkaFenced(err) {
			// The broker already aborted this transaction for the
			// producer that fenced this one; nothing to end.
			d.stop(fmt.Errorf("%w: %w", ErrFenced, err))
			return false
		}
	}
	if refused {
		for i := range results {
			if results[i] == nil {
				results[i] = errAborted
			}
		}
		return d.abortPass(ctx)
	}
	err := d.client.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		failpoint.Hit(failpoint.AfterKafkaCommit)
		d.txnOpen = false
		if d.afterCommit != nil {
			d.afterCommit(ctx)
		}
		return true
	}
	if gone := d.producerGone(err); gone != nil {
		d.stop(gone)
		return false
	}
	err = fmt.Errorf("commit the pass's transaction: %w", err)
	for i := range results {
		if results[i] == nil {
			results[i] = err
		}
	}
	return d.abortPass(ctx)
}

// abortPass aborts the pass's transaction. It reports false when the
// producer is gone (fenced or unauthorized: the dispatcher stopped). When
// the abort itself fails, txnOpen stays set: the next pass aborts again
// before it begins.
func (d *Dispatcher) abortPass(ctx context.Context) bool {
	if err := d.client.EndTransaction(ctx, kgo.TryAbort); err != nil {
		if gone := d.producerGone(err); gone != nil {
			d.stop(gone)
			return false
		}
		d.log.Error(err, "abort the pass's transaction")
		return true
	}
	d.txnOpen = false
	return true
}

// settle records the broker's answers: it moves the outbox cursor over
// the window's rows that are done (delivered, superseded by a delivered or
// parked newer state of their flight, parked, or done by an earlier pass),
// up to the first row that is not, and lists the parked events, in one
// fenced statement (AdvanceCursor); failed events count one attempt more
// with their error in another. Events done above the new cursor are kept
// in d.ahead so the next passes do not send them again. Records held back
// or cancelled with the pass stay pending.
func (d *Dispatcher) settle(ctx context.Context, win store.Window, events []store.OutboxEvent, results []error, solo bool, tm *passTimes) outcome {
	var (
		acked      []store.OutboxEvent
		failedIDs  []int64
		failedErrs []string
		parks      []store.Park
		parkEvents []store.OutboxEvent
		first      error
	)
	// settle runs once the brokers answered every record of the pass: the
	// acknowledgement time of its acked records, within the pass's wait.
	// Most passes deliver every record: acked sized for them all, not
	// grown one record (a few hundred bytes) at a time.
	acked = make([]store.OutboxEvent, 0, len(events))
	ackedAt := d.clock.Now()
	traced := d.log.V(2).Enabled() // a line per event: built only when logged
	for i, e := range events {
		err := results[i]
		if err == nil {
			delete(d.suspects, e.Key())
		}
		switch {
		case err == nil:
			acked = append(acked, e)
			if traced {
				d.log.V(2).Info("delivered", "flid", e.FLID.String(), "msg_id", e.MessageID,
					"kind", e.Kind, "event", e.Event, "state_version", e.StateVersion)
			}
		case errors.Is(err, errHeldBack), errors.Is(err, context.Canceled), errors.Is(err, errAborted):
		case permanentForRecord(err) && solo:
			// Refused alone: the fault is this record's. Parked, it no
			// longer holds back its flight; the other suspects are sent
			// with the next pass as usual.
			err = d.explain(err)
			parks, parkEvents = append(parks, store.Park{ID: e.ID, Kind: e.Kind, Error: err.Error()}), append(parkEvents, e)
			clear(d.suspects)
		case permanentForRecord(err):
			d.suspects[e.Key()] = suspect{err: err.Error(), size: len(e.Payload)}
			d.log.V(1).Info("record refused for good in a pass of several; it will be sent alone",
				"flid", e.FLID.String(), "msg_id", e.MessageID, "kind", e.Kind, "state_version", e.StateVersion,
				"error", err.Error())
		default:
			err = d.explain(err)
			failedIDs = append(failedIDs, e.ID)
			failedErrs = append(failedErrs, err.Error())
			if first == nil {
				first = fmt.Errorf("deliver %s event of flight %s (msg_id %d): %w", e.Kind, e.FLID, e.MessageID, err)
			}
			d.log.V(1).Info("delivery failed", "flid", e.FLID.String(), "msg_id", e.MessageID,
				"kind", e.Kind, "state_version", e.StateVersion, "error", err.Error())
		}
	}
	out := outcome{delivered: len(acked), suspects: len(d.suspects) > 0}
	done := make(map[store.RecordKey]struct{}, len(acked)+len(parks)+len(d.ahead))
	for k := range d.ahead {
		done[k] = struct{}{}
	}
	for _, e := range acked {
		done[e.Key()] = struct{}{}
		if e.Kind == store.KindState {
			out.superseded += int64(len(e.Covers))
			if slices.Contains(e.Covers, e.ID) {
				out.superseded--
			}
		}
	}
	for _, p := range parks {
		done[store.RecordKey{ID: p.ID, Kind: p.Kind}] = struct{}{}
	}
	to, doneRows := win.WindowDone(done)
	if to > win.Cursor || len(acked) > 0 || len(parks) > 0 {
		adv := store.Advance{Parked: parks, Delivered: acked}
		if to > win.Cursor {
			adv.To = to
		}
		dropped, err := d.store.AdvanceCursor(ctx, d.opts.Epoch, adv)
		switch {
		case errors.Is(err, store.ErrFenced):
			// A newer leader owns the outbox: it sends these events again.
			d.stop(fmt.Errorf("%w: %w", ErrFenced, err))
			out.delivered, out.superseded = 0, 0
		case err != nil:
			// The records are in Kafka; the cursor stays and they are sent
			// again (a duplicate at the same version, never a loss).
			out.err = fmt.Errorf("%w: %w", errDatabase, err)
			out.superseded = 0
			d.log.Error(err, "acknowledged records not recorded delivered; they will be sent again", "records", len(acked))
		default:
			out.superseded += dropped
			d.observeLatency(acked, ackedAt)
			for k := range done {
				if k.ID > to {
					d.ahead[k] = struct{}{}
				} else {
					delete(d.ahead, k)
				}
			}
			for _, id := range doneRows {
				if id > to {
					d.aheadRows[id] = struct{}{}
				}
			}
			for i, e := range parkEvents {
				d.recordParked(e, parks[i].Error)
			}
		}
	}
	if len(failedIDs) > 0 && d.stoppedErr() == nil {
		if err := d.store.MarkFailed(ctx, d.opts.Epoch, failedIDs, failedErrs); errors.Is(err, store.ErrFenced) {
			d.stop(fmt.Errorf("%w: %w", ErrFenced, err))
		} else if err != nil {
			d.log.Error(err, "failed deliveries not recorded", "records", len(failedIDs))
		}
		out.err = first
	}
	if stopped := d.stoppedErr(); stopped != nil {
		out.err = stopped
	}
	d.setInflight(0)
	if out.delivered > 0 || out.superseded > 0 {
		d.recordDelivered(out.delivered, out.superseded)
	}
	if out.err != nil {
		if d.stoppedErr() == nil {
			d.recordFailure(out.err)
		}
	} else {
		d.recordSuccess()
	}
	if log := d.log.V(1); log.Enabled() {
		now := d.clock.Now()
		log.Info("pass settled", "events", len(events), "delivered", len(acked),
			"superseded", out.superseded, "failed", len(failedIDs), "parked", len(parks), "suspects", len(d.suspects),
			"cursor", max(to, win.Cursor), "read", tm.read.Sub(tm.start).String(), "produce", tm.produced.Sub(tm.read).String(),
			"acked", tm.acked.Sub(tm.produced).String(), "txn_end", tm.ended.Sub(tm.acked).String(), "mark", now.Sub(tm.ended).String())
	}
	return out
}

// observeLatency observes each delivered record's time from its outbox
// event's commit (DeliveryLatency) and from its message's receipt in the
// mailbox (ReceiptLatency; records whose message is unknown are left out)
// to its acknowledgement. Only records recorded delivered count: ones
// sent again after a failed cursor write are observed once, when
// recorded.
func (d *Dispatcher) observeLatency(acked []store.OutboxEvent, ackedAt time.Time) {
	for _, e := range acked {
		if d.opts.DeliveryLatency != nil {
			d.opts.DeliveryLatency.Observe(max(ackedAt.Sub(e.CreatedAt), 0).Seconds())
		}
		if d.opts.ReceiptLatency != nil && !e.ReceivedAt.IsZero() {
			d.opts.ReceiptLatency.Observe(max(ackedAt.Sub(e.ReceivedAt), 0).Seconds())
		}
	}
}

// explain adds the last broker connection error to a record timeout, which
// alone does not say why nothing was sent.
func (d *Dispatcher) explain(err error) error {
	if errors.Is(err, kgo.ErrRecordTimeout) {
		if conn := d.watch.last(); conn != nil {
			return fmt.Errorf("%w; last broker connection: %w", err, conn)
		}
	}
	return err
}

// errAborted marks a record the broker acknowledged in a transaction that
// was aborted because another record of the pass was refused for good: it
// stays PENDING, untouched, and goes with the next pass.
var errAborted = errors.New("its transaction was aborted: another record of the pass was refused for good")

// suspect is an event refused for good in a pass of several records.
type suspect struct {
	err  string
	size int
}

// permanentForRecord reports a broker answer that repeats for this record
// whatever the retries: it is too large for the topic, or the broker finds
// it invalid. Everything else (outages, leadership moves, timeouts,
// authorization, missing topics) is about the broker or the topic and is
// retried with backoff, never parked.
func permanentForRecord(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage) ||
		errors.Is(err, kerr.InvalidTimestamp) || errors.Is(err, kerr.UnsupportedForMessageFormat)
}

// refusedForGood reports whether any record of a pass was refused for good.
func refusedForGood(results []error) bool {
	for _, err := range results {
		if err != nil && permanentForRecord(err) {
			return true
		}
	}
	return false
}

// isolate picks the event a pass sends alone while suspects remain: the
// window's first event of the largest suspect's topic and flight (the
// suspect itself, or an earlier event of its key that must go first).
// Suspects no longer in the window (superseded, delivered) are dropped.
func (d *Dispatcher) isolate(events []store.OutboxEvent) (store.OutboxEvent, bool) {
	if len(d.suspects) == 0 {
		return store.OutboxEvent{}, false
	}
	in := make(map[store.RecordKey]bool, len(events))
	for _, e := range events {
		in[e.Key()] = true
	}
	best, bestSize := store.RecordKey{}, -1
	for k, s := range d.suspects {
		if !in[k] {
			delete(d.suspects, k)
			continue
		}
		if s.size > bestSize || (s.size == bestSize && recordBefore(k, best)) {
			best, bestSize = k, s.size
		}
	}
	if bestSize < 0 {
		return store.OutboxEvent{}, false
	}
	var target store.OutboxEvent
	for _, e := range events {
		if e.Key() == best {
			target = e
		}
	}
	for _, e := range events {
		if e.Kind == target.Kind && e.FLID == target.FLID {
			return e, true
		}
	}
	return target, true
}

// recordBefore orders records as a pass sends them: by row, a row's state
// before its notice.
func recordBefore(a, b store.RecordKey) bool {
	if a.ID != b.ID {
		return a.ID < b.ID
	}
	return a.Kind == store.KindState && b.Kind != store.KindState
}

// heldKeys are the topic/key pairs with a failed record in a pass.
type heldKeys struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

func newHeldKeys() *heldKeys { return &heldKeys{keys: map[string]struct{}{}} }

func (h *heldKeys) add(k string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keys[k] = struct{}{}
}

func (h *heldKeys) has(k string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.keys[k]
	return ok
}
