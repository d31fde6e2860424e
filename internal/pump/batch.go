package pump

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
	"unsafe"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// outcome is what one message came to inside a batch.
type outcome struct {
	result pumpdata.Result
	// changed: the message queued outbox events (wake the dispatcher).
	changed bool
	trace   *pumpdata.TraceEntry
	// rewrite: the row was terminal already; only its backfill is redone.
	rewrite bool
	// seqnRegression describes the message's SEQN regression (empty when
	// it has none), alerted when its result commits.
	seqnRegression string
	// requestFailed: the message was the refused answer that ended its
	// day's full-day request FAILED, noticed when its result commits.
	requestFailed *pumpdata.FailedRequest
}

type batchOutcome struct {
	// blocked: the head could not advance; wait before the next try.
	blocked bool
	wait    time.Duration
	// err is fatal for the pump (fenced).
	err error
	// whole: every row of the batch was committed.
	whole bool
}

// processBatch applies rows in one transaction. Rows were
// decoded before (pure, read ahead), then everything the batch reads is
// prefetched in one round trip — flights this pump committed come from its
// cache, checked by version; increments and deletions are decided in a
// working set in memory — a message the rules refuse changes nothing but
// its own result — and snapshots run inside a savepoint of their own. The
// archive rows, results and combined writes go out in two final round
// trips (Tx.Write). An
// infrastructure error rolls back the whole batch; a message that must wait
// (UNSUPPORTED retry) ends the batch before it.
func (p *Pump) processBatch(ctx context.Context, rows []pumpdata.Row, b decodedBatch) batchOutcome {
	start := p.clock.Now()
	// Decoding is pure: it happened before the writer lock is taken.
	b.request.Cache = p.cache
	// What the head's result records whatever becomes of the batch (a
	// snapshot's decoded records are dropped once it is applied).
	head := headResult(b.items[0])
	tx, err := p.store.Begin(ctx, p.epoch)
	if err != nil {
		return p.infraFailure(ctx, rows, head, nil, err, false)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// A failure rolls the batch back before anything else: its transaction
	// holds the writer lock, which the record of the failure takes again.
	fail := func(attempted []outcome, err error, atCommit bool) batchOutcome {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return p.infraFailure(ctx, rows, head, attempted, err, atCommit)
	}

	pre, err := tx.Prefetch(ctx, b.request)
	if err != nil {
		return fail(nil, err, false)
	}
	run := &batchRun{tx: tx, set: pre.Set, priors: pre.Priors, seen: map[string][]byte{}, seqn: map[string]int{}, reload: b.request}

	reused := p.reusedIDs(b.items, pre.States)
	if err := tx.Write(ctx, Writes{Reused: reused}); err != nil {
		return fail(nil, err, false)
	}

	// Sized for the whole batch: grown an item at a time they were copied
	// about twice over.
	done := make([]outcome, 0, len(b.items))
	archive := make([]pumpdata.ArchivedRow, 0, len(b.items))
	var waitFor *waiting
	for i, it := range b.items {
		prior, known := pre.States[it.row.ID]
		if known && prior.Terminal() {
			// Processed before (a backfill did not land): only write back.
			done = append(done, outcome{rewrite: true, result: pumpdata.Result{MessageID: it.row.ID, ReceivedAt: it.row.Received,
				Status: prior.Status, Reason: prior.Reason, Note: prior.Note}})
			continue
		}
		o, w, err := p.processGuarded(ctx, run, it, prior)
		if pe, ok := asPanic(err); ok {
			return p.applyPanicked(ctx, it.row, done, pe)
		}
		if err != nil {
			// The failing snapshot's own attempt is traced with the rest.
			return fail(append(done, o), err, false)
		}
		if it.msg != nil && it.msg.Kind == sis.KindSnapshot {
			// A snapshot is written by now: its decoded records (tens of
			// megabytes for a full day) need not live until the commit.
			b.items[i].msg = nil
		}
		if w != nil && i > 0 {
			break // commit what precedes; the waiting message goes alone next time
		}
		// A row the prefetch found no processing state for is new to the
		// database: its archive row and result are plain inserts.
		isNew := !known && !p.upsertOnly
		o.result.New = isNew
		if i == 0 {
			// The head's failed attempts no FAILED(INFRA) recorded yet.
			o.result.Attempts = p.unrecorded.at(keyOf(it.row)) + 1
		}
		archive = append(archive, pumpdata.ArchivedRow{MessageID: it.row.ID, ReceivedAt: it.row.Received, Size: it.row.Size,
			Body: it.row.Body, Digest: it.digest, Truncated: it.row.Truncated, New: isNew})
		done = append(done, o)
		if w != nil {
			waitFor = w
			break
		}
	}
	results := make([]pumpdata.Result, 0, len(done))
	for _, o := range done {
		if !o.rewrite {
			results = append(results, o.result)
		}
	}
	if err := tx.Write(ctx, Writes{Archive: archive, Set: run.set, Results: results, Reference: run.reference}); err != nil {
		return fail(done, err, false)
	}
	failpoint.Hit(failpoint.BeforeCommit)
	if err := tx.Commit(ctx); err != nil {
		return fail(done, err, true)
	}
	p.unrecorded = unrecorded{}
	failpoint.Hit(failpoint.AfterCommit)
	p.cache.Keep(run.set)
	maps.Copy(p.lastSeqn, run.seqn)
	for _, it := range b.items[:len(done)] {
		delete(p.panicked, keyOf(it.row))
	}
	p.reportReused(reused)
	p.afterCommit(ctx, done, start)
	if waitFor != nil {
		p.update(func(s *Status) {
			if s.HeadID != rows[0].ID || s.HeadBlockedSince.IsZero() {
				s.HeadBlockedSince = p.clock.Now()
			}
			s.HeadID, s.HeadLastError = rows[0].ID, waitFor.reason
		})
		return batchOutcome{blocked: true, wait: waitFor.wait}
	}
	p.infraAttempts, p.refusal, p.upsertOnly = 0, refusal{}, false
	p.batchSize = min(p.batchSize*2, int(p.feed.Spec.Mailbox.BatchSize))
	p.update(func(s *Status) {
		s.HeadBlockedSince, s.HeadLastError, s.DatabaseReachable, s.DatabaseError = time.Time{}, "", true, ""
	})
	return batchOutcome{whole: len(done) == len(rows)}
}

// item is one row with its decoding.
type item struct {
	row pumpdata.Row
	// digest is pumpdata.PayloadDigest(row.Body), computed once.
	digest []byte
	msg    *sis.Message
	decErr error
}

type decodedBatch struct {
	items   []item
	request pumpdata.PrefetchRequest
}

// decodeBatch decodes every row (pure) and lists what the batch will read.
func (p *Pump) decodeBatch(rows []pumpdata.Row) decodedBatch {
	return p.decodeBatchWith(rows, p.decode)
}

// decodeBatchWith is decodeBatch with the decoder's options opts (a
// skip-conflicts replay's: sis.Options.SkipRefusedRecords).
func (p *Pump) decodeBatchWith(rows []pumpdata.Row, opts sis.Options) decodedBatch {
	b := decodedBatch{items: make([]item, len(rows))}
	since := rows[0].Received
	for i, row := range rows {
		it := item{row: row, digest: pumpdata.PayloadDigest(row.Body)}
		if !row.Truncated && !row.Null {
			it.msg, it.decErr = p.decodeOne(row, opts)
		}
		b.request.MessageIDs = append(b.request.MessageIDs, row.ID)
		if row.Received.Before(since) {
			since = row.Received
		}
		if it.msg != nil && it.decErr == nil {
			b.request.IdentityKeys = append(b.request.IdentityKeys, it.msg.Meta.IdentityKey())
			switch it.msg.Kind {
			case sis.KindFLOP, sis.KindADFT:
				for _, r := range it.msg.Records {
					b.request.FLIDs = append(b.request.FLIDs, r.FLID)
				}
				b.request.Versions += len(it.msg.Records)
			case sis.KindFDEL:
				b.request.FLIDs = append(b.request.FLIDs, it.msg.Deletions...)
				b.request.Versions += len(it.msg.Deletions)
			}
		}
		b.items[i] = it
	}
	b.request.Since = since.Add(-p.feed.Spec.Mailbox.DedupWindow.Duration)
	failpoint.Hit(failpoint.AfterDecode)
	return b
}

// batchRun is the state of one batch while its messages are decided.
type batchRun struct {
	tx     Tx
	set    *engine.WorkingSet
	priors map[string]pumpdata.PriorCopy
	// seen holds content digests of this batch's processed messages by
	// identity key, for copies re-sent within one batch.
	seen map[string][]byte
	// seqn holds the last SEQN per sender of this batch's messages, until
	// the batch commits (see seqnRegressed).
	seqn   map[string]int
	reload pumpdata.PrefetchRequest
	// skipConflicts: a skip-conflicts replay (pumpdata.Snapshot.SkipConflicts).
	skipConflicts bool
	// replay: a replay of an archived message, whose SEQN belongs to an
	// earlier moment of the session and is not compared (no
	// SEQN_REGRESSION).
	replay bool
	// requestFailed is set by the snapshot that ended its day's request
	// FAILED, until processOne puts it on the message's outcome.
	requestFailed *pumpdata.FailedRequest
	// reference are the batch's reference-data changes, written with its
	// results.
	reference []pumpdata.ReferenceChange
}

// waiting says the message must be retried later (FAILED, non-terminal).
type waiting struct {
	wait   time.Duration
	reason string
}

// infraFailure follows a rolled-back batch and decides how to
// retry: a conflict at once, anything else with backoff; a batch of more
// than one message shrinks to one so the failing message is isolated.
// rows is the whole batch: its first row stays the head, and head is what
// the head's result records; attempted are the outcomes decided before the
// failure, atCommit says the failure is the COMMIT's own.
//
// Every snapshot attempt is traced (processing rules R5.6), also when the batch
// stopped because the pump was fenced or stopped (AttemptTrace). A
// failure to be retried is recorded on the head, once it is tried alone, as
// FAILED (INFRA) with its attempt count (processing rules R9), in a transaction of
// its own: when the database itself is what fails, that record fails too,
// and the attempts it could not record are counted in memory and added by
// the head's next result that reaches the database (Result.Attempts).
// Nothing is recorded on the head when the COMMIT's outcome is unknown: its
// result may be committed, and the next attempt reads what is.
func (p *Pump) infraFailure(ctx context.Context, rows []pumpdata.Row, head pumpdata.Result, attempted []outcome, err error, atCommit bool) batchOutcome {
	verdict, reason := Classify(err, p.store)
	var stop error
	if ctx.Err() != nil {
		stop = context.Cause(ctx)
	}
	result, flag := AttemptTrace(err, atCommit, stop, p.store)
	p.traceUnfinished(ctx, attempted, result, flag, err)
	if verdict == VerdictFenced {
		return batchOutcome{err: err}
	}
	if stop != nil {
		return batchOutcome{blocked: true}
	}
	inDoubt := result == pumpdata.TraceCommitUnknown
	p.batchSize = 1
	if inDoubt {
		// The same message as any failed batch (the reliability suite
		// reads it), saying what is not known.
		p.log.Error(err, "batch rolled back", "msg_id", head.MessageID,
			"commit", "outcome unknown: it may have committed; the next attempt reads what did")
	} else {
		p.log.Error(err, "batch rolled back", "msg_id", head.MessageID)
	}
	if verdict == VerdictConflict {
		// Retried at once: from a fresh read, and with upserts when a row
		// written as new was not.
		p.upsertOnly = p.upsertOnly || errors.Is(err, pumpdata.ErrNotNew)
		return batchOutcome{blocked: true, wait: time.Millisecond}
	}
	// One more failed attempt at the head, until a result records it (one
	// whose commit is in doubt too: if it did commit, the head is only
	// written back from now on and the count is never used).
	p.unrecorded.add(keyOf(rows[0]))
	if len(rows) == 1 && !inDoubt {
		// The database itself refuses this one message's data (a data or
		// integrity error, a program limit, or the same answer about it
		// RefusalRepeats times in a row): retrying cannot help, and the
		// head must not block on it.
		note := ""
		switch {
		case verdict == VerdictDead:
			note = fmt.Sprintf("%s: the database refused the message's data: %v", reason, err)
		case p.refusedAgain(head.MessageID, err):
			reason = ReasonDataRejected
			note = fmt.Sprintf("%s: the database refused the message %d times in a row: %v", reason, RefusalRepeats, err)
		}
		if note != "" {
			if derr := p.giveUp(ctx, rows[0], head, reason, note); derr == nil {
				p.infraAttempts, p.refusal = 0, refusal{}
				return batchOutcome{}
			}
		}
	}
	p.infraAttempts++
	now := p.clock.Now()
	// The ping runs before the status lock is taken, and is bounded: a
	// stalled database must not hold the status every reader waits on.
	answered := p.store.Answer(err).Server
	reachable := true
	if !answered {
		pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
		reachable = p.store.Ping(pingCtx) == nil
		cancel()
	}
	p.update(func(s *Status) {
		if s.HeadID != head.MessageID || s.HeadBlockedSince.IsZero() {
			s.HeadBlockedSince = now
		}
		s.HeadID, s.HeadLastError = head.MessageID, err.Error()
		if !answered {
			s.DatabaseReachable, s.DatabaseError = reachable, err.Error()
		}
	})
	if inDoubt {
		return batchOutcome{blocked: true, wait: p.backoff()}
	}
	if limit := p.feed.Spec.Pump.InfraRetryLimit; limit > 0 && p.infraAttempts > int(limit) {
		if derr := p.giveUp(ctx, rows[0], head, ReasonInfra,
			fmt.Sprintf("%s: gave up after %d attempts: %v", ReasonInfra, p.infraAttempts, err)); derr == nil {
			p.infraAttempts = 0
			return batchOutcome{}
		}
	}
	if len(rows) == 1 {
		// The failing message is isolated: it is the one FAILED. (A larger
		// batch is tried again as the head alone first; its attempt counts.)
		if ferr := p.recordFailed(ctx, head, err); errors.Is(ferr, pumpdata.ErrFenced) {
			return batchOutcome{err: ferr}
		}
	}
	return batchOutcome{blocked: true, wait: p.backoff()}
}

// errResultRecorded: a give-up found the head's result committed already.
var errResultRecorded = errors.New("its result is recorded already")

// pingTimeout bounds the database ping after a failed batch.
const pingTimeout = 5 * time.Second

// headResult is what a result of it records of a batch's message beside its
// status: its identity, digests, type and subtype (those a decoder error
// left unknown stay empty).
func headResult(it item) pumpdata.Result {
	res := pumpdata.Result{MessageID: it.row.ID, ReceivedAt: it.row.Received, PayloadDigest: it.digest}
	if it.msg != nil {
		res.Type, res.Styp, res.IdentityKey = it.msg.Meta.Type, it.msg.Meta.Styp, it.msg.Meta.IdentityKey()
		res.ContentDigest = it.msg.ContentDigest
	}
	return res
}

// unrecorded counts a head's failed attempts that no result records yet.
type unrecorded struct {
	key   panicKey
	count int
}

// add counts a failed attempt at the head key, a new head starting from
// one.
func (u *unrecorded) add(key panicKey) {
	if u.key != key {
		*u = unrecorded{key: key}
	}
	u.count++
}

// at is the count for key (0 when the count is another head's).
func (u *unrecorded) at(key panicKey) int {
	if u.key != key {
		return 0
	}
	return u.count
}

// recordFailed records the head's failed attempt, and those before it that
// could not be recorded, as FAILED (INFRA) in a transaction of its own: the
// message is visible in `flightfeed dead` and counted as FAILED (processing rules
// R9) while it blocks the head. A FAILED never replaces a terminal state
// (the store keeps the committed result). Its own failure is only logged:
// when the database is what fails, the next result that reaches it counts
// the attempts.
func (p *Pump) recordFailed(ctx context.Context, head pumpdata.Result, cause error) error {
	res := head
	res.Status, res.Reason, res.Attempts = pumpdata.StatusFailed, ReasonInfra, p.unrecorded.at(panicKey{head.MessageID, head.ReceivedAt})
	res.Note = fmt.Sprintf("%s: %v (retried with backoff)", ReasonInfra, cause)
	p.obs.MessageDone(res.Type, res.Styp, res.Status)
	p.update(func(s *Status) { s.Counts[res.Status]++ })
	// Bounded: a stalled database must not hold the retry longer than the
	// failed batch did.
	rctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	err := p.writeAlone(rctx, res)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Info("FAILED (INFRA) not recorded: the next result that reaches the database counts this attempt",
				"msg_id", head.MessageID, "error", err.Error())
		}
		return err
	}
	p.unrecorded = unrecorded{}
	return nil
}

// writeAlone writes one result in a transaction of its own.
func (p *Pump) writeAlone(ctx context.Context, res pumpdata.Result) error {
	tx, err := p.store.Begin(ctx, p.epoch)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.Write(ctx, Writes{Results: []pumpdata.Result{res}}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// giveUp makes the head DEAD in a transaction of its own: after the
// configured number of infrastructure retries, or at once when the
// database deterministically refuses the message's data. It carries the
// head's payload digest, so a re-read of its row (a write-back that did not
// land) is known as this message, and its attempts; not its identity key: a
// message that was never applied is no prior copy a re-sent one could be
// SKIPPED against. It archives the row's raw text with it, as a batch does
// every message, so that once the cause is fixed the message can be
// replayed; when that write fails, the DEAD is recorded without it.
//
// It never replaces a committed result: a head whose message is terminal
// already (only its write-back was being redone: an operator reset the
// mailbox row, a write-back did not land) or whose id the database records
// for another message (a reused id the failing batch did not get to
// retire) is not given up — the batch is retried until it writes back what
// committed (processing rules R7.2: never downgrade a committed success).
func (p *Pump) giveUp(ctx context.Context, row pumpdata.Row, head pumpdata.Result, reason, note string) error {
	res := head
	res.Status, res.Reason, res.Note = pumpdata.StatusDead, reason, note
	res.IdentityKey, res.ContentDigest = "", nil
	res.Attempts = p.unrecorded.at(panicKey{head.MessageID, head.ReceivedAt})
	archived := pumpdata.ArchivedRow{MessageID: row.ID, ReceivedAt: row.Received, Size: row.Size, Body: row.Body,
		Digest: head.PayloadDigest, Truncated: row.Truncated}
	err := p.writeGivenUp(ctx, res, &archived)
	// Whatever failed, the DEAD alone is tried at once: the retry limit
	// promises the head moves on once the result can be recorded, and the
	// archive is what keeps it replayable, not what gives it up. (When the
	// connection failed, the second try fails too and the next attempt
	// archives again.)
	if err != nil && !errors.Is(err, errResultRecorded) && !errors.Is(err, pumpdata.ErrFenced) && ctx.Err() == nil {
		p.log.Info("the raw text of a message given up could not be archived; recording it DEAD without (it cannot be replayed)",
			"msg_id", head.MessageID, "error", err.Error())
		err = p.writeGivenUp(ctx, res, nil)
	}
	if err != nil {
		return err
	}
	p.unrecorded = unrecorded{}
	p.afterCommit(ctx, []outcome{{result: res}}, p.clock.Now())
	return nil
}

// writeGivenUp records res, and archived unless nil, in a transaction of
// its own, unless the database records a result for the id already.
func (p *Pump) writeGivenUp(ctx context.Context, res pumpdata.Result, archived *pumpdata.ArchivedRow) error {
	tx, err := p.store.Begin(ctx, p.epoch)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	pre, err := tx.Prefetch(ctx, pumpdata.PrefetchRequest{MessageIDs: []int64{res.MessageID}})
	if err != nil {
		return err
	}
	prior, known := pre.States[res.MessageID]
	if known && (prior.Terminal() || !prior.ReceivedAt.Equal(res.ReceivedAt)) {
		p.log.Info("not given up: the database records a result for this mailbox id already; retrying to write it back",
			"msg_id", res.MessageID, "recorded", prior.Status, "recorded_received", prior.ReceivedAt.UTC().Format(time.RFC3339Nano),
			"reason", res.Reason)
		return fmt.Errorf("give up message %d: %w (%s)", res.MessageID, errResultRecorded, prior.Status)
	}
	w := Writes{Results: []pumpdata.Result{res}}
	if archived != nil {
		// Known (FAILED before): an archive row of it may exist; the insert
		// skips it then.
		a := *archived
		a.New = !known
		w.Archive = []pumpdata.ArchivedRow{a}
	}
	if err := tx.Write(ctx, w); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// afterCommit does what must follow a commit: queue the results for write
// back, wake the dispatcher, append trace rows, update counters.
func (p *Pump) afterCommit(ctx context.Context, done []outcome, start time.Time) {
	if len(done) == 0 {
		return
	}
	p.obs.BatchCommitted(len(done), p.clock.Since(start))
	results := make([]pumpdata.Backfill, 0, len(done))
	changed := false
	// The batch's results were committed together: one processed time for
	// all of them, which the write-back sends once (mailbox.Backfill).
	processed := p.clock.Now()
	for _, o := range done {
		r := o.result
		if r.Status != pumpdata.StatusFailed {
			// FAILED is not terminal: the row stays at the head for its retry.
			results = append(results, pumpdata.Backfill{MessageID: r.MessageID, Received: r.ReceivedAt, Result: r.Status, Note: r.Note,
				Processed: processed})
		}
		changed = changed || o.changed
		if !o.rewrite {
			p.obs.MessageDone(r.Type, r.Styp, r.Status)
			if r.Status == pumpdata.StatusDead && r.Reason == ReasonInternal {
				p.obs.MessagePanicked()
			}
			if o.seqnRegression != "" {
				p.obs.SeqnRegression()
			}
		}
	}
	if changed && p.opts.Notify != nil {
		p.opts.Notify()
	}
	// Written back by the next head read (readAhead), or when the loop
	// idles or stops; the intents are committed already.
	p.pending = append(p.pending, results...)
	p.writeTraces(ctx, done, "")
	p.requestsFailed(done)
	last := done[len(done)-1].result.MessageID
	now := p.clock.Now()
	p.update(func(s *Status) {
		s.LastProcessedID = max(s.LastProcessedID, last)
		for _, o := range done {
			if o.rewrite {
				continue
			}
			s.Counts[o.result.Status]++
			if o.result.Status != pumpdata.StatusFailed {
				p.rate.count++
			}
			if o.result.Status == pumpdata.StatusDead {
				p.notice(o.result.MessageID, o.result.Reason, o.result.Note)
			}
			if o.seqnRegression != "" && o.trace == nil {
				// A snapshot's regression is noticed with its trace row's
				// flags (writeTraces).
				p.addNotice(Notice{Kind: NoticeSeqnRegression, MessageID: o.result.MessageID, Reason: FlagSeqnRegression,
					Detail: o.seqnRegression})
			}
		}
		if elapsed := now.Sub(p.rate.since); elapsed >= 10*time.Second {
			s.MessagesPerSecond = float64(p.rate.count) / elapsed.Seconds()
			p.rate.count, p.rate.since = 0, now
		}
	})
}

// refusal counts the same server error at the same head, batch of one.
type refusal struct {
	head  int64
	sig   string
	count int
}

// refusedAgain records err at head and reports whether the server has now
// answered the same way RefusalRepeats times in a row (RefusalSignature).
func (p *Pump) refusedAgain(head int64, err error) bool {
	sig, ok := RefusalSignature(err, p.store)
	if !ok {
		p.refusal = refusal{}
		return false
	}
	if p.refusal.head != head || p.refusal.sig != sig {
		p.refusal = refusal{head: head, sig: sig}
	}
	p.refusal.count++
	return p.refusal.count >= RefusalRepeats
}

// bodyText views a mailbox body as a string without copying it: a body
// is never changed after it is read, and a decoded message keeps
// substrings of it, so a copy would hold a large message twice in memory
// (31.5 MB more for a full-day DNLD).
func bodyText(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(body), len(body)) //nolint:gosec // read-only view, see above
}
