package pump

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// processOne decides one decoded message inside the batch: its result,
// and its effect in the working set (increments, deletions) or in the
// transaction under a savepoint (snapshots). w is set when the message must
// wait (FAILED, retried later); err only for failures that roll back the
// whole batch (infrastructure, CAS conflict, fencing).
func (p *Pump) processOne(ctx context.Context, run *batchRun, it item, prior pumpdata.ProcState) (o outcome, w *waiting, err error) {
	row, msg := it.row, it.msg
	res := pumpdata.Result{MessageID: row.ID, ReceivedAt: row.Received, PayloadDigest: it.digest}
	if row.Null {
		return p.finish(res, pumpdata.StatusDead, ReasonEmptyBody, "the mailbox row's body column is NULL", nil)
	}
	if row.Truncated {
		limit := fmt.Sprintf("mailbox.maxMessageBytes %d", p.feed.Spec.Mailbox.MaxMessageBytes)
		if row.PacketLimited {
			limit = fmt.Sprintf("the %d bytes the mailbox server's max_allowed_packet lets it send", len(row.Body))
		}
		return p.finish(res, pumpdata.StatusDead, string(sis.ReasonOversize), fmt.Sprintf("message is %d bytes, more than %s", row.Size, limit), nil)
	}
	if msg != nil {
		res.Type, res.Styp, res.IdentityKey = msg.Meta.Type, msg.Meta.Styp, msg.Meta.IdentityKey()
		res.ContentDigest = msg.ContentDigest
		if len(msg.IgnoredTags) > 0 {
			p.obs.IgnoredTags(msg.IgnoredTags)
		}
	}
	if note, ok := p.panicked[keyOf(row)]; ok {
		// Its application panicked and the batch was rolled back: this
		// run of the batch leaves it out (applyPanicked).
		var trace *pumpdata.TraceEntry
		if msg != nil && msg.Kind == sis.KindSnapshot {
			trace = &pumpdata.TraceEntry{MessageID: row.ID, ReceivedAt: row.Received, Recs: max(msg.Recs, 0),
				Result: pumpdata.TraceRolledBack, Flags: []string{ReasonInternal}, Detail: note}
		}
		return p.finish(res, pumpdata.StatusDead, ReasonInternal, note, trace)
	}
	if it.decErr != nil {
		o, w, err := p.rejected(res, prior, it.decErr)
		if msg != nil && msg.Kind == sis.KindSnapshot && o.result.Status == pumpdata.StatusDead {
			// A snapshot the decoder refused (RECS mismatch, duplicate FLID,
			// sequence 0 mixed, over capacity, …) is a processing attempt
			// too: one trace row, ROLLED_BACK, flagged with its reason
			// (processing rules R5.6).
			o.trace = &pumpdata.TraceEntry{MessageID: row.ID, ReceivedAt: row.Received, Recs: max(msg.Recs, 0),
				Result: pumpdata.TraceRolledBack, Flags: []string{o.result.Reason}, Detail: o.result.Note}
			if err == nil {
				// An answer the decoder refuses counts against the request
				// like one the snapshot rules refuse.
				err = p.refuseDecodedAnswer(ctx, run, msg, row, o.result.Note)
				o.requestFailed, run.requestFailed = run.requestFailed, nil
			}
		}
		return o, w, err
	}
	// Built only when a line is logged: a logger with values costs an
	// encoding of them, and almost every message logs nothing.
	log := func() logr.Logger {
		return p.log.WithValues("msg_id", row.ID, "type", msg.Meta.Type, "styp", msg.Meta.Styp)
	}

	// Re-sent copies (processing rules R10.4): same identity, same content → SKIPPED;
	// same identity, other content → processed and flagged. Content is the
	// message without its send time (sis.ResendFields): the AODB re-stamps
	// a copy it sends again.
	digest, found := run.seen[res.IdentityKey]
	if !found {
		if pc, ok := run.priors[res.IdentityKey]; ok && !pc.ReceivedAt.Before(row.Received.Add(-p.feed.Spec.Mailbox.DedupWindow.Duration)) {
			digest, found = pc.Digest, true
		}
	}
	if found && bytes.Equal(digest, res.ContentDigest) {
		return p.finish(res, pumpdata.StatusSkipped, ReasonDuplicate,
			"re-sent copy of an already processed message "+res.IdentityKey, nil)
	}
	if found {
		res.Flags = append(res.Flags, FlagSeqnReuse)
		log().Info("SEQN reused with another payload", "identity", res.IdentityKey)
	}
	regression := ""
	if last, ok := p.seqnRegressed(run, msg.Meta); ok && !run.replay {
		res.Flags = append(res.Flags, FlagSeqnRegression)
		regression = fmt.Sprintf("%s/%s from %s: SEQN %d after %d in this session", msg.Meta.Type, msg.Meta.Styp, msg.Meta.Sndr,
			msg.Meta.SeqnNum, last)
		log().Info("SEQN regression", "sender", msg.Meta.Sndr, "seqn", msg.Meta.SeqnNum, "previous", last)
	}
	defer func() {
		if err == nil {
			o.seqnRegression = regression
		}
		if err == nil && (o.result.Status == pumpdata.StatusSucceeded || o.result.Status == pumpdata.StatusDead) {
			run.seen[res.IdentityKey] = res.ContentDigest
		}
	}()

	if msg.Kind == sis.KindNotApplied {
		// A type of the interface FlightFeed does not apply: terminal at
		// once, never retried (processing rules R9's FAILED(UNSUPPORTED)
		// is for types nobody knows).
		return p.finish(res, pumpdata.StatusSkipped, ReasonNotApplied, msg.NotApplied.Reason, nil)
	}
	changed, trace, flags, applyErr := p.apply(ctx, run, msg, row)
	if p.hooks.applied != nil {
		p.hooks.applied(row.ID)
	}
	requestFailed := run.requestFailed
	run.requestFailed = nil
	if applyErr != nil {
		verdict, reason := Classify(applyErr, p.store)
		if verdict != VerdictDead {
			// The batch is rolled back whole (an infrastructure error, a
			// lost compare-and-set): the snapshot's attempt is traced all
			// the same (processing rules R5.6, one row per attempt), by
			// infraFailure.
			if trace != nil {
				trace.Result, trace.Detail = pumpdata.TraceRolledBack, applyErr.Error()
				trace.Flags = dedup(append(trace.Flags, res.Flags...))
				o.trace = trace
			}
			return o, nil, applyErr
		}
		log().Info("message refused", "reason", reason, "error", applyErr.Error())
		if trace != nil {
			// Refused whole: the trace row says why — DAY_MISMATCH for the
			// seed's ownership mismatch (R5.3), the reason code for any
			// other refusal — with the message's own flags.
			trace.Result, trace.Detail = pumpdata.TraceRolledBack, applyErr.Error()
			flag := reason
			if reason == snapshot.ReasonDayMismatch {
				flag = FlagDayMismatch
			}
			trace.Flags = dedup(append(append(trace.Flags, flag), res.Flags...))
			trace.Conflicts = dayConflicts(applyErr)
		}
		o, w, err := p.finish(res, pumpdata.StatusDead, reason, applyErr.Error(), trace)
		o.requestFailed = requestFailed
		return o, w, err
	}
	res.Flags = append(res.Flags, flags...)
	if trace != nil {
		res.Flags = append(res.Flags, trace.Flags...)
		trace.Flags = dedup(append(trace.Flags, res.Flags...))
	}
	o, w, err = p.finish(res, pumpdata.StatusSucceeded, "", "", trace)
	o.changed = changed
	return o, w, err
}

// dayConflicts lists the FLIDs a day-mismatch refusal names with both their
// days, for the trace row and so for `flightfeed dead`; nil for any other
// error.
func dayConflicts(err error) []pumpdata.DayConflict {
	var rej *snapshot.Rejection
	if !errors.As(err, &rej) || len(rej.Conflicts) == 0 {
		return nil
	}
	out := make([]pumpdata.DayConflict, 0, min(len(rej.Conflicts), pumpdata.MaxTraceConflicts))
	for _, c := range rej.Conflicts[:min(len(rej.Conflicts), pumpdata.MaxTraceConflicts)] {
		out = append(out, pumpdata.DayConflict{FLID: c.FLID.String(), StoredDay: c.StoredDay, MessageDay: c.MessageDay})
	}
	return out
}

// rejected handles a message the decoder refused: DEAD for illegal input,
// FAILED(UNSUPPORTED) retried up to the limit, then DEAD.
func (p *Pump) rejected(res pumpdata.Result, prior pumpdata.ProcState, decErr error) (outcome, *waiting, error) {
	verdict, reason := Classify(decErr, p.store)
	detail := decErr.Error()
	var se *sis.Error
	if errors.As(decErr, &se) {
		detail = se.Note(1 << 12)
	}
	if verdict != VerdictUnsupported {
		return p.finish(res, pumpdata.StatusDead, reason, detail, nil)
	}
	attempts := prior.Attempts + 1
	limit := int(*p.feed.Spec.Pump.UnsupportedRetryLimit)
	if attempts > limit {
		return p.finish(res, pumpdata.StatusDead, reason, fmt.Sprintf("%s (after %d attempts)", detail, attempts), nil)
	}
	o, _, err := p.finish(res, pumpdata.StatusFailed, reason, detail, nil)
	spec := p.feed.Spec.Pump
	return o, &waiting{wait: Backoff(attempts, spec.BackoffInitial.Duration, spec.BackoffMax.Duration, p.rand), reason: detail}, err
}

// finish builds the message's result; the batch writes every result (and
// its backfill intent) with its final round trip.
func (p *Pump) finish(res pumpdata.Result, status, reason, detail string, trace *pumpdata.TraceEntry) (outcome, *waiting, error) {
	res.Status, res.Reason = status, reason
	if status != pumpdata.StatusSucceeded {
		res.Note = reason
		if detail != "" && !strings.HasPrefix(detail, reason) {
			res.Note = reason + ": " + detail
		} else if detail != "" {
			res.Note = detail
		}
	}
	return outcome{result: res, trace: trace}, nil, nil
}

// apply dispatches a decoded message to its write path; flags are raised
// on the message's result.
func (p *Pump) apply(ctx context.Context, run *batchRun, msg *sis.Message, row pumpdata.Row) (changed bool, trace *pumpdata.TraceEntry, flags []string, err error) {
	meta := p.meta(msg, row)
	switch msg.Kind {
	case sis.KindSnapshot:
		changed, trace, err = p.applySnapshotIsolated(ctx, run, meta, msg, row)
		return changed, trace, nil, err
	case sis.KindADFT, sis.KindFLOP, sis.KindFDEL:
		change := engine.Change{Increments: make([]flight.Commands, len(msg.Records)), Deletions: msg.Deletions}
		for i, r := range msg.Records {
			change.Increments[i] = r.Commands
		}
		eff, err := run.set.Apply(meta, change, engine.Plausibility{Location: p.feed.Location, Window: p.feed.Spec.History.PlausibleWindow.Duration})
		if err != nil {
			return false, nil, nil, err
		}
		return len(eff.Versions) > 0, nil, p.implausibleTimes(row.ID, eff), nil
	case sis.KindReference:
		run.reference = append(run.reference, referenceChange(row.ID, msg.Reference))
		if err := p.completeReferenceRequest(ctx, run.tx, msg, row.ID); err != nil {
			return false, nil, nil, err
		}
		if msg.Reference.DuplicateKeys > 0 {
			return false, nil, []string{FlagDuplicateKey}, nil
		}
		return false, nil, nil, nil
	default:
		return false, nil, nil, &sis.Error{Reason: sis.Reason(ReasonUnsupported), Class: sis.ClassUnsupported,
			Detail: fmt.Sprintf("message kind %s has no handler", msg.Kind)}
	}
}

// referenceChange is what a reference-data message writes: its records'
// keys and documents under its operation.
func referenceChange(id int64, ref *sis.Reference) pumpdata.ReferenceChange {
	c := pumpdata.ReferenceChange{MessageID: id, Type: ref.Kind.Type, Keys: make([]string, len(ref.Records))}
	switch ref.Op {
	case sis.RefReplace:
		c.Op = pumpdata.RefReplace
	case sis.RefUpsert:
		c.Op = pumpdata.RefUpsert
	case sis.RefDelete:
		c.Op = pumpdata.RefDelete
	}
	if c.Op != pumpdata.RefDelete {
		c.Docs = make([][]byte, len(ref.Records))
	}
	for i, r := range ref.Records {
		c.Keys[i] = r.Key
		if c.Docs != nil {
			c.Docs[i] = r.Doc
		}
	}
	return c
}

// implausibleTimes flags and logs a message that set a CNCL, NAAT or NEAT
// farther than history.plausibleWindow from its flight's day (the engine
// decides which: eff; the time is kept as sent, but drives no history rule).
func (p *Pump) implausibleTimes(id int64, eff engine.MessageEffect) []string {
	if len(eff.ImplausibleTags) == 0 {
		return nil
	}
	p.log.Info("time implausibly far from the flight's day: kept, but drives no history rule",
		"msg_id", id, "flid", eff.ImplausibleFLID.String(), "fields", eff.ImplausibleTags)
	return []string{FlagImplausibleTime}
}

// applySnapshotIsolated writes what the working set holds so far, applies
// the snapshot inside a savepoint (rolled back alone when refused), and
// reloads the working set, whose flights the snapshot may have changed.
func (p *Pump) applySnapshotIsolated(ctx context.Context, run *batchRun, meta engine.Meta, msg *sis.Message, row pumpdata.Row) (bool, *pumpdata.TraceEntry, error) {
	if run.set.Dirty() {
		if err := run.tx.Write(ctx, Writes{Set: run.set}); err != nil {
			return false, attemptTrace(msg, row), err
		}
	}
	sp, err := run.tx.Savepoint(ctx)
	if err != nil {
		return false, attemptTrace(msg, row), err
	}
	changed, trace, answered, applyErr := p.applySnapshot(ctx, sp, meta, msg, row, run.skipConflicts)
	if applyErr != nil {
		if err := sp.Rollback(ctx); err != nil {
			// The cause first: a failed rollback usually follows from it
			// (a terminated backend), and alone it hides it.
			return false, trace, fmt.Errorf("%w (and rolling back its savepoint: %w)", applyErr, err)
		}
		// Outside the savepoint: the refusal is the request's, the
		// message's own writes are undone.
		if err := p.refuseAnswer(ctx, run, answered, row.ID, applyErr); err != nil {
			return false, trace, err
		}
	} else if err := sp.Commit(ctx); err != nil {
		return false, trace, err
	}
	// The flights alone: no message ids, no identity keys.
	pre, err := run.tx.Prefetch(ctx, pumpdata.PrefetchRequest{FLIDs: run.reload.FLIDs, Versions: run.reload.Versions, Cache: run.reload.Cache})
	if err != nil {
		return false, trace, err
	}
	run.set = pre.Set
	return changed, trace, applyErr
}

// applySnapshot applies one snapshot in tx. answered is the live full-day
// request the message answers (a RESP from the request's receiver: of its
// day, or straddling it), nil when none; a refused answer counts against
// it (refuseAnswer).
func (p *Pump) applySnapshot(ctx context.Context, tx Tx, meta engine.Meta, msg *sis.Message, row pumpdata.Row,
	skipConflicts bool) (changed bool, trace *pumpdata.TraceEntry, answered *pumpdata.Request, err error) {
	start := p.clock.Now()
	trace = attemptTrace(msg, row)
	days := make([]string, len(msg.Records))
	for i, r := range msg.Records {
		days[i] = r.OperationDay
	}
	var records []pumpdata.SnapshotRecord
	var source pumpdata.RecordSource
	if msg.Deferred() {
		source = messageRecords{msg}
	} else {
		records = make([]pumpdata.SnapshotRecord, len(msg.Records))
		for i, r := range msg.Records {
			records[i] = pumpdata.SnapshotRecord{Cmds: r.Commands, Day: r.OperationDay}
		}
	}
	pending, err := tx.CurrentRequest(ctx, requestKind)
	if err != nil {
		return false, trace, answered, err
	}
	reqs := snapshot.Requests{}
	if pending != nil {
		reqs.PendingDay, reqs.PendingSender = pending.Day, pending.Receiver
	}
	var lookupErr error
	reqs.RequestedBefore = func(day, sender string) bool {
		ok, err := tx.RequestedBefore(ctx, requestKind, day, sender)
		if err != nil {
			lookupErr = err
		}
		return ok
	}
	if answeredBy(pending, msg.Meta) && (len(days) == 0 || slices.Contains(days, pending.Day)) {
		// The request's receiver answers with records of its day, perhaps
		// with others (refused whole, but an answer all the same).
		answered = pending
	}
	cov, err := snapshot.Attribute(snapshot.Inbound{Styp: msg.Meta.Styp, Sender: msg.Meta.Sndr, Days: days, DNLDFullDay: p.feed.Spec.Mailbox.DNLDFullDay}, reqs)
	if lookupErr != nil {
		return false, trace, answered, lookupErr
	}
	trace.Day, trace.Flags = cov.Day, cov.Flags
	if err != nil {
		return false, trace, answered, err
	}
	if !cov.CompletesPending {
		answered = nil // a window, another day's snapshot, a late answer
	}
	var keep []flight.FLID
	for _, r := range msg.Refused {
		keep = append(keep, r.FLID)
	}
	out, err := tx.ApplySnapshot(ctx, meta, pumpdata.Snapshot{FullDay: cov.FullDay, Day: cov.Day, Records: records, Source: source,
		SentAt: msg.Meta.ParsedTime, SkipConflicts: skipConflicts, Keep: keep})
	trace.OldVersion, trace.NewVersion, trace.DeletedCount = out.OldVersion, out.NewVersion, len(out.Deleted)
	trace.OldDigest, trace.NewDigest = out.OldDigest, out.NewDigest
	trace.Duration = p.clock.Since(start)
	if err != nil {
		return false, trace, answered, err
	}
	trace.Result = pumpdata.TraceCommitted
	var details []string
	if len(msg.Refused) > 0 {
		details = append(details, refusedDetail(msg.Refused))
	}
	if len(out.Skipped) > 0 {
		details = append(details, skippedDetail(out.Skipped))
	}
	trace.Detail = strings.Join(details, "; ")
	if out.Replay {
		trace.Result = pumpdata.TraceReplaySkipped
	} else if cov.FullDay {
		// Alerts only: the snapshot is committed all the same (processing rules R5.6).
		if snapshot.RecsDropped(out.OldRoster, out.NewRoster, int(p.feed.Spec.Mailbox.RecsDropPercent)) {
			trace.Flags = append(trace.Flags, snapshot.FlagRecsDrop)
		}
		if snapshot.OutOfOrder(out.PrevSentAt, msg.Meta.ParsedTime) {
			trace.Flags = append(trace.Flags, snapshot.FlagOutOfOrder)
		}
	}
	if cov.CompletesPending && pending != nil {
		if err := tx.SettleRequest(ctx, pending.ID, pumpdata.RequestSettlement{Status: pumpdata.RequestCompleted, MessageID: row.ID}); err != nil {
			return false, trace, answered, err
		}
	}
	return len(out.Versions) > 0, trace, answered, nil
}

// refuseAnswer counts a refused answer against the live request it
// answered: the message stays refused whole (processing rules
// R5.2), and the second identical refusal in a row of the day's answers
// ends the request FAILED (snapshot.AnswerRefusal), so the day is not
// asked for again until an operator re-requests it. Only a decided refusal
// (*snapshot.Rejection) counts.
func (p *Pump) refuseAnswer(ctx context.Context, run *batchRun, req *pumpdata.Request, msgID int64, applyErr error) error {
	var rej *snapshot.Rejection
	if req == nil || !errors.As(applyErr, &rej) {
		return nil
	}
	return p.countRefusal(ctx, run, req, msgID, rej.Error())
}

// refuseDecodedAnswer counts a snapshot the decoder refused (a record's
// bad time, a RECS mismatch, …) against the live request when it is the
// request's answer: a RESP from the request's receiver with a record of
// the request's day. The refused message keeps no records, so its row is
// decoded again leaving out the refused records (as a skip-conflicts
// replay would) to read the days of the others; when even that fails, the
// days are unknown and nothing is counted. note is the message's DEAD note
// (reason and detail), what two identical refusals are compared by.
func (p *Pump) refuseDecodedAnswer(ctx context.Context, run *batchRun, msg *sis.Message, row pumpdata.Row, note string) error {
	if msg.Meta.Styp != "RESP" {
		return nil // no answer: the request is not even read
	}
	req, err := run.tx.CurrentRequest(ctx, requestKind)
	if err != nil || !answeredBy(req, msg.Meta) {
		return err
	}
	records := msg.Records
	if len(records) == 0 {
		opts := p.decode
		opts.SkipRefusedRecords = true
		rest, err := p.decodeOne(row, opts)
		if err != nil {
			return nil
		}
		records = rest.Records
	}
	if !slices.ContainsFunc(records, func(r sis.Record) bool { return r.OperationDay == req.Day }) {
		return nil // another day's answer, or days unknown
	}
	return p.countRefusal(ctx, run, req, row.ID, note)
}

// answeredBy reports whether a message of meta is an answer to the live
// request req: a RESP from the request's receiver (any sender when the
// request names none). Which day it answers is the caller's to check.
func answeredBy(req *pumpdata.Request, meta sis.Meta) bool {
	return req != nil && meta.Styp == "RESP" && (req.Receiver == "" || req.Receiver == meta.Sndr)
}

// countRefusal settles the refusal of req's answer msgID: still PENDING
// with the count, or FAILED at the second identical one.
func (p *Pump) countRefusal(ctx context.Context, run *batchRun, req *pumpdata.Request, msgID int64, refusal string) error {
	if len(refusal) > maxRefusal {
		refusal = strings.ToValidUTF8(refusal[:maxRefusal], "") + "…"
	}
	count, giveUp := snapshot.AnswerRefusal(req.Rejection, req.Rejections, refusal)
	st := pumpdata.RequestSettlement{Status: pumpdata.RequestPending, MessageID: msgID, Rejections: count, Rejection: refusal}
	if giveUp {
		st.Status = pumpdata.RequestFailed
		run.requestFailed = &pumpdata.FailedRequest{Day: req.Day, Rejection: refusal, MessageID: msgID, FailedAt: p.clock.Now()}
	}
	return run.tx.SettleRequest(ctx, req.ID, st)
}

// maxRefusal bounds the refusal a request keeps (its reason code and the
// start of its detail).
const maxRefusal = 480

// deferRecordsFrom is the body size from which a snapshot is decoded
// without keeping its records' commands (sis.Options.DeferRecordsFrom): the
// store decodes them again a chunk at a time as it applies them
// (messageRecords), so a full-day DNLD (31.5 MB, about 100 MB of decoded
// commands) is applied within the chart's 512 MiB. Smaller snapshots keep
// theirs and are decoded once.
const deferRecordsFrom = 8 << 20

// messageRecords is a deferred snapshot's records as a pumpdata.RecordSource:
// each chunk is decoded from the body when the store asks for it.
type messageRecords struct{ msg *sis.Message }

func (m messageRecords) Len() int { return len(m.msg.Records) }

func (m messageRecords) Key(i int) (flight.FLID, string) {
	return m.msg.Records[i].FLID, m.msg.Records[i].OperationDay
}

func (m messageRecords) Chunk(lo, hi int) ([]pumpdata.SnapshotRecord, error) {
	recs, err := m.msg.LoadRecords(lo, hi)
	if err != nil {
		return nil, err
	}
	out := make([]pumpdata.SnapshotRecord, len(recs))
	for i, r := range recs {
		out[i] = pumpdata.SnapshotRecord{Cmds: r.Commands, Day: r.OperationDay}
	}
	return out, nil
}

// attemptTrace starts the trace row of one attempt to apply a snapshot.
func attemptTrace(msg *sis.Message, row pumpdata.Row) *pumpdata.TraceEntry {
	trace := &pumpdata.TraceEntry{MessageID: row.ID, ReceivedAt: row.Received, Recs: len(msg.Records)}
	if msg.Recs >= 0 {
		trace.Recs = msg.Recs
	}
	return trace
}

// seqnRegressed flags a SEQN lower than the sender's previous one in this
// session, unless it wrapped (999999 → 1). Only a flag: SEQN is not
// comparable across server restarts (processing rules R5.6).
//
// The batch's own SEQNs are kept apart (run.seqn) and join lastSeqn only
// when the batch commits: after a rollback the retried messages must not be
// compared with SEQNs that were never committed.
func (p *Pump) seqnRegressed(run *batchRun, m sis.Meta) (last int, regressed bool) {
	last, seen := run.seqn[m.Sndr]
	if !seen {
		last, seen = p.lastSeqn[m.Sndr]
	}
	run.seqn[m.Sndr] = m.SeqnNum
	if !seen || m.SeqnNum >= last {
		return last, false
	}
	wrapped := last > int(sis.MaxSeqn)-1000 && m.SeqnNum < 1000
	return last, !wrapped
}

// writeTraces appends the trace rows of the snapshots in done, outside any
// message transaction, one per processing attempt; a failure is logged and
// counted (Observer.TraceLogFailed), never propagated (processing rules R5.6). Every
// flag of a row is an alert: counted (Observer.SnapshotFlag) and a notice
// (NoticeSnapshotFlag, a warning Event). A non-empty override replaces every
// row's result (a rolled-back batch): such a row raises no alert, as the
// batch is retried and its next attempt raises them, so a rollback and its
// retry alert once.
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
			e.Result = pumpdata.TraceRolledBack
		}
		if e.Duration == 0 {
			e.Duration = time.Millisecond
		}
		if err := p.store.AppendTraceLog(context.WithoutCancel(ctx), e); err != nil {
			p.obs.TraceLogFailed()
			p.log.Error(err, "trace log (ignored)", "msg_id", e.MessageID)
		}
		if override == "" {
			p.alert(e)
		}
	}
}

// traceUnfinished appends the trace rows of a batch's snapshot attempts
// that did not commit (AttemptTrace decided result and flag): ROLLED_BACK,
// or COMMIT_UNKNOWN for an attempt that is COMMITTED or REPLAY_SKIPPED if
// the commit went through; a refused snapshot's row stays ROLLED_BACK
// (its savepoint was rolled back whatever the commit did). The batch's
// error is the detail of a row that has none, the flag (FENCED, SHUTDOWN) is
// added to its flags. They raise no alert: the attempt that commits does.
// The writes are bounded: a stopping pump must not hang on them.
func (p *Pump) traceUnfinished(ctx context.Context, attempted []outcome, result, flag string, cause error) {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceTimeout)
	defer cancel()
	for _, o := range attempted {
		if o.trace == nil {
			continue
		}
		e := *o.trace
		if result == pumpdata.TraceCommitUnknown && (e.Result == pumpdata.TraceCommitted || e.Result == pumpdata.TraceReplaySkipped) {
			e.Result, e.IfCommitted = pumpdata.TraceCommitUnknown, e.Result
		} else {
			e.Result = pumpdata.TraceRolledBack
		}
		if flag != "" {
			e.Flags = dedup(append(slices.Clone(e.Flags), flag))
		}
		if why := cause.Error(); !strings.Contains(e.Detail, why) {
			e.Detail = strings.TrimPrefix(e.Detail+"; "+why, "; ")
		}
		if e.Duration == 0 {
			e.Duration = time.Millisecond
		}
		if err := p.store.AppendTraceLog(tctx, e); err != nil {
			p.obs.TraceLogFailed()
			p.log.Error(err, "trace log (ignored)", "msg_id", e.MessageID)
		}
	}
}

// traceTimeout bounds the trace writes of a batch that did not commit.
const traceTimeout = 5 * time.Second

// alert counts and notices every flag of a trace row.
func (p *Pump) alert(e pumpdata.TraceEntry) {
	if len(e.Flags) == 0 {
		return
	}
	detail := "snapshot " + e.Result
	if e.Day != "" {
		detail += " for " + e.Day
	}
	if e.Detail != "" {
		detail += ": " + e.Detail
	}
	p.update(func(*Status) {
		for _, f := range e.Flags {
			p.obs.SnapshotFlag(f)
			p.addNotice(Notice{Kind: NoticeSnapshotFlag, MessageID: e.MessageID, Reason: f, Detail: detail})
		}
	})
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
