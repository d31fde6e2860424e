package pump

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// replayBatch bounds the replay requests taken between two batches.
const replayBatch = 10

// runReplays applies the PENDING replay requests (processing rules R10.8) between
// batches, each in a fenced transaction of its own. Only fencing is
// returned; any other failure leaves the request PENDING for the next pass.
func (p *Pump) runReplays(ctx context.Context) error {
	reqs, err := p.store.PendingReplays(ctx, replayBatch)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Error(err, "read replay requests")
		}
		return nil
	}
	for _, req := range reqs {
		if err := p.replay(ctx, req); err != nil {
			if errors.Is(err, pumpdata.ErrFenced) {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			p.log.Error(err, "replay rolled back; retried on the next pass", "msg_id", req.MessageID, "replay", req.ID)
			return nil
		}
	}
	return nil
}

// replay applies one request: the archived raw text runs through today's
// rules as if it had just arrived (a new trace row, events as usual), its
// result is the request's outcome, and the original message's note (in
// proc_state and its mailbox row) says what the replay came to. A request
// that does not fit the message (it is no longer DEAD, its text is not
// archived, skip-conflicts on another reason) is REFUSED with the reason.
func (p *Pump) replay(ctx context.Context, req pumpdata.ReplayRequest) error {
	start := p.clock.Now()
	log := p.log.WithValues("msg_id", req.MessageID, "replay", req.ID, "policy", req.Policy)
	tx, err := p.store.Begin(ctx, p.epoch)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	src, err := tx.ReplaySource(ctx, req.MessageID)
	if err != nil {
		return err
	}
	if why := replayRefusal(req, src); why != "" {
		req.State, req.Note = pumpdata.ReplayRefused, why
		if err := tx.Write(ctx, Writes{Replay: &req}); err != nil {
			return err
		}
		log.Info("replay refused", "why", why)
		return tx.Commit(ctx)
	}

	row := pumpdata.Row{ID: req.MessageID, Received: src.ReceivedAt, Body: src.Body, Size: int64(len(src.Body))}
	opts := p.decode
	// skip-conflicts skips the records the decoder refuses, each named with
	// its FLID and refusal in the outcome, as it skips day mismatches.
	opts.SkipRefusedRecords = req.Policy == pumpdata.ReplaySkipConflicts
	b := p.decodeBatchWith([]pumpdata.Row{row}, opts)
	it := b.items[0]
	if req.Policy == pumpdata.ReplaySkipConflicts && (it.msg == nil || it.decErr != nil || it.msg.Kind != sis.KindSnapshot) {
		req.State, req.Note = pumpdata.ReplayRefused, "skip-conflicts is only for a snapshot, and the archived text no longer decodes as one"
		if it.decErr != nil {
			req.Note = "skip-conflicts is only for a snapshot whose refusal lies in records it can leave out, and the archived text does not decode even without them: " +
				it.decErr.Error()
		}
		if err := tx.Write(ctx, Writes{Replay: &req}); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	// The message itself is no prior copy of itself.
	b.request.MessageIDs = nil
	b.request.Cache = p.cache
	pre, err := tx.Prefetch(ctx, b.request)
	if err != nil {
		return err
	}
	for key, pc := range pre.Priors {
		if pc.MessageID == req.MessageID {
			delete(pre.Priors, key)
		}
	}
	run := &batchRun{tx: tx, set: pre.Set, priors: pre.Priors, seen: map[string][]byte{}, seqn: map[string]int{}, reload: b.request,
		skipConflicts: req.Policy == pumpdata.ReplaySkipConflicts, replay: true}
	o, _, err := p.processGuarded(ctx, run, it, pumpdata.ProcState{})
	if pe, ok := asPanic(err); ok {
		// Rolled back whole: the request ends, the message stays as it
		// was, and the next pass does not run into the same panic.
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return p.replayPanicked(ctx, req, src, it, pe, start.UTC().Format("2006-01-02T15:04:05Z"))
	}
	// failed traces the replay's attempt that did not commit, as a live
	// batch's (processing rules R5.6: one row per attempt): ROLLED_BACK, flagged
	// FENCED or SHUTDOWN when that stopped it. A COMMIT whose outcome is
	// unknown writes no row: a replay that did commit leaves the message
	// DEAD (the replay lives in its request), so the start's resolution by
	// the message's state would call it rolled back; the request, PENDING
	// or DONE, says what happened.
	failed := func(err error, atCommit bool) error {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		var stop error
		if ctx.Err() != nil {
			stop = context.Cause(ctx)
		}
		if result, flag := AttemptTrace(err, atCommit, stop, p.store); result == pumpdata.TraceRolledBack {
			p.traceUnfinished(ctx, []outcome{o}, result, flag, err)
		}
		return err
	}
	if err != nil {
		return failed(err, false)
	}
	res := o.result
	req.State, req.Result, req.Reason, req.Note = pumpdata.ReplayDone, res.Status, res.Reason, res.Note
	if o.trace != nil && o.trace.Detail != "" && res.Status == pumpdata.StatusSucceeded {
		req.Note = o.trace.Detail
	}
	note := replayNote(src.State.Note, req, start.UTC().Format("2006-01-02T15:04:05Z"))
	if err := tx.Write(ctx, Writes{Set: run.set, Reference: run.reference, Replay: &req, ReplayNote: note}); err != nil {
		return failed(err, false)
	}
	if err := tx.Commit(ctx); err != nil {
		return failed(err, true)
	}
	p.cache.Keep(run.set)
	log.Info("message replayed", "result", res.Status, "reason", res.Reason)
	if o.changed && p.opts.Notify != nil {
		p.opts.Notify()
	}
	p.pending = append(p.pending, pumpdata.Backfill{MessageID: req.MessageID, Received: src.ReceivedAt, Result: src.State.Status,
		Note: note, Processed: p.clock.Now()})
	p.writeTraces(ctx, []outcome{o}, "")
	p.requestsFailed([]outcome{o})
	p.replayDone(req, res)
	return nil
}

// replayPanicked ends a replay whose application panicked, in a transaction
// of its own: the request is DONE with DEAD (INTERNAL), nothing of the
// message is applied, and the original message's note says so, as a live
// message's panic would (a request left PENDING would panic the pump at
// every pass).
func (p *Pump) replayPanicked(ctx context.Context, req pumpdata.ReplayRequest, src pumpdata.ReplaySource, it item,
	pe *panicError, at string) error {
	res := pumpdata.Result{MessageID: req.MessageID, ReceivedAt: src.ReceivedAt, Status: pumpdata.StatusDead,
		Reason: ReasonInternal, Note: pe.Error()}
	if it.msg != nil {
		res.Type, res.Styp = it.msg.Meta.Type, it.msg.Meta.Styp
	}
	req.State, req.Result, req.Reason, req.Note = pumpdata.ReplayDone, res.Status, res.Reason, res.Note
	note := replayNote(src.State.Note, req, at)
	tx, err := p.store.Begin(ctx, p.epoch)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.Write(ctx, Writes{Replay: &req, ReplayNote: note}); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	p.pending = append(p.pending, pumpdata.Backfill{MessageID: req.MessageID, Received: src.ReceivedAt, Result: src.State.Status,
		Note: note, Processed: p.clock.Now()})
	p.replayDone(req, res)
	return nil
}

// replayDone counts a replay's outcome like a live message's: the messages
// metric, the status counts, and a DEAD replay's notice (an Event of its
// reason), its detail naming the replay.
func (p *Pump) replayDone(req pumpdata.ReplayRequest, res pumpdata.Result) {
	p.obs.MessageDone(res.Type, res.Styp, res.Status)
	if res.Status == pumpdata.StatusDead && res.Reason == ReasonInternal {
		p.obs.MessagePanicked()
	}
	p.update(func(s *Status) {
		s.Counts[res.Status]++
		if res.Status == pumpdata.StatusDead {
			p.notice(req.MessageID, res.Reason, fmt.Sprintf("replay %d (%s): %s", req.ID, req.Policy, res.Note))
		}
	})
}

// replayRefusal says why req cannot run on the message as it is now ("" when
// it can); the command checked the same when it recorded the request.
func replayRefusal(req pumpdata.ReplayRequest, src pumpdata.ReplaySource) string {
	switch {
	case src.State.Status == "":
		return "this feed never processed a message with that id"
	case !src.Archived:
		return "its raw text is not archived (archive retention pruned it)"
	case src.Truncated:
		return "only the first bytes of its raw text are archived"
	}
	return pumpdata.ReplayFits(req.Policy, src.State.Status, src.State.Reason)
}

// replayNote is the original message's note after a replay: its own note,
// then what the replay came to.
func replayNote(orig string, req pumpdata.ReplayRequest, at string) string {
	what := req.Result
	if req.Note != "" {
		what += ": " + req.Note
	}
	note := fmt.Sprintf("replayed %s at %s (request %d): %s", req.Policy, at, req.ID, what)
	if orig == "" {
		return note
	}
	return orig + " | " + note
}

// refusedDetail lists the records the decoder refused and a skip-conflicts
// replay left out, each by its FLID, position and refusal, for the trace
// row and the replay's note: nothing is dropped silently.
func refusedDetail(refused []sis.RefusedRecord) string {
	parts := make([]string, len(refused))
	for i, r := range refused {
		parts[i] = fmt.Sprintf("FLID %s (FLTR[%d]): %s", r.FLID, r.Index, r.Err.Note(200))
	}
	return fmt.Sprintf("skip-conflicts: %d refused record(s) left out and their flights untouched: %s",
		len(refused), strings.Join(parts, "; "))
}

// skippedDetail lists the FLIDs a skip-conflicts replay left out, for the
// trace row.
func skippedDetail(skipped []flight.FLID) string {
	ids := make([]string, len(skipped))
	for i, f := range skipped {
		ids[i] = f.String()
	}
	return fmt.Sprintf("skip-conflicts: %d FLID(s) of other operation days left out of the roster and untouched: %s",
		len(skipped), strings.Join(ids, ", "))
}
