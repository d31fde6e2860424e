package pump

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/snapshot"
	"github.com/flightfeed/flightfeed/internal/store"
)

// processOne archives, decodes and applies one message inside the batch
// transaction. It returns the message's outcome; w is set when the message
// must wait (FAILED, retried later); err only for failures that roll back
// the whole batch (infrastructure, CAS conflict, fencing).
func (p *Pump) processOne(ctx context.Context, tx *store.Tx, row mailbox.Row, prior store.ProcState) (o outcome, w *waiting, err error) {
	log := p.log.WithValues("msg_id", row.ID)
	if err := tx.Archive(ctx, store.ArchivedRow{MessageID: row.ID, ReceivedAt: row.Received, Size: row.Size,
		Body: row.Body, Truncated: row.Truncated}); err != nil {
		return o, nil, err
	}
	res := store.Result{MessageID: row.ID, ReceivedAt: row.Received, PayloadDigest: store.Digest(row.Body)}
	if row.Truncated {
		return p.finish(ctx, tx, res, store.StatusDead, string(sis.ReasonOversize),
			fmt.Sprintf("message is %d bytes, more than mailbox.maxMessageBytes %d", row.Size, p.feed.Spec.Mailbox.MaxMessageBytes), nil)
	}

	msg, decErr := sis.Decode(row.Body, p.decode)
	if msg != nil {
		res.Type, res.Styp, res.IdentityKey = msg.Meta.Type, msg.Meta.Styp, msg.Meta.IdentityKey()
		if len(msg.IgnoredTags) > 0 {
			p.obs.IgnoredTags(msg.IgnoredTags)
		}
	}
	if decErr != nil {
		return p.rejected(ctx, tx, res, prior, decErr)
	}
	log = log.WithValues("type", msg.Meta.Type, "styp", msg.Meta.Styp)

	// Re-sent copies (SPEC §2.4): same identity, same payload → SKIPPED;
	// same identity, other payload → processed and flagged.
	since := row.Received.Add(-p.feed.Spec.Mailbox.DedupWindow.Duration)
	digest, found, err := tx.PriorCopy(ctx, res.IdentityKey, since, row.ID)
	if err != nil {
		return o, nil, err
	}
	if found && bytes.Equal(digest, res.PayloadDigest) {
		return p.finish(ctx, tx, res, store.StatusSkipped, ReasonDuplicate,
			"re-sent copy of an already processed message "+res.IdentityKey, nil)
	}
	if found {
		res.Flags = append(res.Flags, FlagSeqnReuse)
		log.Info("SEQN reused with another payload", "identity", res.IdentityKey)
	}
	if p.seqnRegressed(msg.Meta) {
		res.Flags = append(res.Flags, FlagSeqnRegression)
		log.Info("SEQN regression", "sender", msg.Meta.Sndr, "seqn", msg.Meta.SeqnNum)
	}

	sp, err := tx.Savepoint(ctx)
	if err != nil {
		return o, nil, err
	}
	changed, trace, applyErr := p.apply(ctx, sp, msg, row)
	if applyErr != nil {
		_ = sp.Rollback(ctx)
		verdict, reason := Classify(applyErr)
		if verdict != VerdictDead {
			return o, nil, applyErr
		}
		log.Info("message refused", "reason", reason, "error", applyErr.Error())
		if trace != nil {
			trace.Result, trace.Detail = store.TraceRolledBack, applyErr.Error()
			if reason == snapshot.ReasonDayMismatch {
				trace.Flags = append(trace.Flags, FlagDayMismatch)
			}
		}
		return p.finish(ctx, tx, res, store.StatusDead, reason, applyErr.Error(), trace)
	}
	if err := sp.Commit(ctx); err != nil {
		return o, nil, err
	}
	if trace != nil {
		res.Flags = append(res.Flags, trace.Flags...)
		trace.Flags = append(trace.Flags, res.Flags...)
		trace.Flags = dedup(trace.Flags)
	}
	o, w, err = p.finish(ctx, tx, res, store.StatusSucceeded, "", "", trace)
	o.changed = changed
	return o, w, err
}

// rejected handles a message the decoder refused: DEAD for illegal input,
// FAILED(UNSUPPORTED) retried up to the limit, then DEAD.
func (p *Pump) rejected(ctx context.Context, tx *store.Tx, res store.Result, prior store.ProcState, decErr error) (outcome, *waiting, error) {
	verdict, reason := Classify(decErr)
	detail := decErr.Error()
	var se *sis.Error
	if errors.As(decErr, &se) {
		detail = se.Note(1 << 12)
	}
	if verdict != VerdictUnsupported {
		return p.finish(ctx, tx, res, store.StatusDead, reason, detail, nil)
	}
	attempts := prior.Attempts + 1
	limit := int(*p.feed.Spec.Pump.UnsupportedRetryLimit)
	if attempts > limit {
		return p.finish(ctx, tx, res, store.StatusDead, reason, fmt.Sprintf("%s (after %d attempts)", detail, attempts), nil)
	}
	o, _, err := p.finish(ctx, tx, res, store.StatusFailed, reason, detail, nil)
	spec := p.feed.Spec.Pump
	return o, &waiting{wait: Backoff(attempts, spec.BackoffInitial.Duration, spec.BackoffMax.Duration, p.rand), reason: detail}, err
}

// finish records the result (proc_state and, when terminal, the backfill
// intent) in the batch transaction.
func (p *Pump) finish(ctx context.Context, tx *store.Tx, res store.Result, status, reason, detail string, trace *store.TraceEntry) (outcome, *waiting, error) {
	res.Status, res.Reason = status, reason
	if status != store.StatusSucceeded {
		res.Note = reason
		if detail != "" && !strings.HasPrefix(detail, reason) {
			res.Note = reason + ": " + detail
		} else if detail != "" {
			res.Note = detail
		}
	}
	if err := tx.RecordResult(ctx, res); err != nil {
		return outcome{}, nil, err
	}
	return outcome{result: res, trace: trace}, nil, nil
}

// apply dispatches a decoded message to its write path.
func (p *Pump) apply(ctx context.Context, tx *store.Tx, msg *sis.Message, row mailbox.Row) (changed bool, trace *store.TraceEntry, err error) {
	meta := p.meta(msg, row.ID)
	switch msg.Kind {
	case sis.KindSnapshot:
		return p.applySnapshot(ctx, tx, meta, msg, row)
	case sis.KindADFT, sis.KindFLOP:
		records := make([]flight.Commands, len(msg.Records))
		for i, r := range msg.Records {
			records[i] = r.Commands
		}
		out, err := tx.ApplyIncrement(ctx, meta, records)
		return len(out.Versions) > 0, nil, err
	case sis.KindFDEL:
		out, err := tx.DeleteFlights(ctx, meta, msg.Deletions)
		return len(out.Versions) > 0, nil, err
	default:
		return false, nil, &sis.Error{Reason: sis.Reason(ReasonUnsupported), Class: sis.ClassUnsupported,
			Detail: fmt.Sprintf("message kind %s has no handler", msg.Kind)}
	}
}

func (p *Pump) applySnapshot(ctx context.Context, tx *store.Tx, meta store.Meta, msg *sis.Message, row mailbox.Row) (bool, *store.TraceEntry, error) {
	start := p.clock.Now()
	trace := &store.TraceEntry{MessageID: row.ID, ReceivedAt: row.Received, Recs: len(msg.Records)}
	if msg.Recs >= 0 {
		trace.Recs = msg.Recs
	}
	days := make([]string, len(msg.Records))
	records := make([]store.SnapshotRecord, len(msg.Records))
	for i, r := range msg.Records {
		days[i] = r.OperationDay
		records[i] = store.SnapshotRecord{Cmds: r.Commands, Day: r.OperationDay}
	}
	pending, err := tx.PendingRequest(ctx, requestKind)
	if err != nil {
		return false, nil, err
	}
	reqs := snapshot.Requests{}
	if pending != nil {
		reqs.PendingDay = pending.Day
	}
	var lookupErr error
	reqs.RequestedBefore = func(day string) bool {
		ok, err := tx.RequestedBefore(ctx, requestKind, day)
		if err != nil {
			lookupErr = err
		}
		return ok
	}
	cov, err := snapshot.Attribute(snapshot.Inbound{Styp: msg.Meta.Styp, Days: days, DNLDFullDay: p.feed.Spec.Mailbox.DNLDFullDay}, reqs)
	if lookupErr != nil {
		return false, nil, lookupErr
	}
	trace.Day, trace.Flags = cov.Day, cov.Flags
	if err != nil {
		return false, trace, err
	}
	out, err := tx.ApplySnapshot(ctx, meta, store.Snapshot{FullDay: cov.FullDay, Day: cov.Day, Records: records})
	trace.OldVersion, trace.NewVersion, trace.DeletedCount = out.OldVersion, out.NewVersion, len(out.Deleted)
	trace.OldDigest, trace.NewDigest = out.OldDigest, out.NewDigest
	trace.Duration = p.clock.Since(start)
	if err != nil {
		return false, trace, err
	}
	trace.Result = store.TraceCommitted
	if out.Replay {
		trace.Result = store.TraceReplaySkipped
	}
	if cov.CompletesPending && pending != nil {
		if err := tx.CompleteRequest(ctx, pending.ID, row.ID); err != nil {
			return false, trace, err
		}
	}
	return len(out.Versions) > 0, trace, nil
}

// seqnRegressed flags a SEQN lower than the sender's previous one in this
// session, unless it wrapped (999999 → 1). Only a flag: SEQN is not
// comparable across server restarts (seed 000 §5.6).
func (p *Pump) seqnRegressed(m sis.Meta) bool {
	last, seen := p.lastSeqn[m.Sndr]
	p.lastSeqn[m.Sndr] = m.SeqnNum
	if !seen || m.SeqnNum >= last {
		return false
	}
	wrapped := last > int(sis.MaxSeqn)-1000 && m.SeqnNum < 1000
	return !wrapped
}

// writeTraces appends the trace rows of the snapshots in done, outside any
// message transaction; a failure is logged, never propagated (seed 000 §5.6).
// A non-empty override replaces every row's result (a rolled-back batch).
func (p *Pump) writeTraces(ctx context.Context, done []outcome, override string) {
	for _, o := range done {
		if o.trace == nil {
			continue
		}
		e := *o.trace
		if override != "" {
			e.Result = override
		}
		if e.Result == "" {
			e.Result = store.TraceRolledBack
		}
		if e.Duration == 0 {
			e.Duration = time.Millisecond
		}
		if err := p.store.AppendTraceLog(context.WithoutCancel(ctx), e); err != nil {
			p.log.Error(err, "trace log (ignored)", "msg_id", e.MessageID)
		}
	}
}

func dedup(flags []string) []string {
	seen := map[string]bool{}
	out := flags[:0]
	for _, f := range flags {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}
