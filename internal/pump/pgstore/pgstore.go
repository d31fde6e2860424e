// Package pgstore is the pump's PostgreSQL adapter: the feed's database
// (*store.Store) as the pump's Store port (internal/pump ports.go). The
// ports are the pump's own, and store's methods keep the shape that suits
// SQL; what the ports consolidate (Start, Backfills, SettleBackfills,
// Write, SettleRequest, Sweep) is composed here from store's calls, one
// for one as the pump made them before, and what the database's errors
// mean (pump.Answers) is store's SQLSTATE knowledge. The pump imports no
// driver; package feedrun wires this adapter in.
package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
)

// New is the real pump.Store: the feed's database st, which the caller
// keeps (and closes).
func New(st *store.Store) pump.Store { return pgStore{st: st} }

type pgStore struct {
	// Answers reads the driver's errors (store's dberror.go).
	store.Answers
	st *store.Store
}

func (s pgStore) CurrentRequest(ctx context.Context, kind string) (*pumpdata.Request, error) {
	return s.st.CurrentRequest(ctx, kind)
}

func (s pgStore) Start(ctx context.Context, holder string, epoch int64) (pump.Session, error) {
	if epoch == 0 {
		var err error
		if epoch, err = s.st.TakeEpoch(ctx, holder); err != nil {
			return pump.Session{}, err
		}
	}
	last, err := s.st.LastSeqn(ctx)
	if err != nil {
		return pump.Session{}, err
	}
	resolved, traceErr := s.st.ResolveCommitUnknown(ctx)
	return pump.Session{Epoch: epoch, LastSeqn: last, TracesResolved: resolved, TraceErr: traceErr}, nil
}

func (s pgStore) RenewEpoch(ctx context.Context, epoch int64) error {
	return s.st.RenewEpoch(ctx, epoch)
}

func (s pgStore) Ping(ctx context.Context) error { return s.st.Ping(ctx) }

func (s pgStore) Unanswered() (time.Time, string) { return s.st.Unanswered() }

func (s pgStore) Begin(ctx context.Context, epoch int64) (pump.Tx, error) {
	tx, err := s.st.Begin(ctx, epoch)
	if err != nil {
		return nil, err
	}
	return pgTx{tx}, nil
}

func (s pgStore) Backfills(ctx context.Context, limit int) ([]pumpdata.Backfill, int64, error) {
	var pending []pumpdata.Backfill
	if limit > 0 {
		var err error
		if pending, err = s.st.PendingBackfills(ctx, limit); err != nil {
			return nil, 0, err
		}
	}
	n, err := s.st.CountBackfills(ctx)
	if err != nil {
		return pending, 0, err
	}
	return pending, n, nil
}

func (s pgStore) SettleBackfills(ctx context.Context, ids []int64, cause error) error {
	if cause != nil {
		return s.st.BackfillFailed(ctx, ids, cause)
	}
	return s.st.BackfillDone(ctx, ids)
}

func (s pgStore) AppendTraceLog(ctx context.Context, e pumpdata.TraceEntry) error {
	return s.st.AppendTraceLog(ctx, e)
}

func (s pgStore) Prune(ctx context.Context, traceBefore, archiveBefore, eventsBefore time.Time) (int64, error) {
	return s.st.Prune(ctx, traceBefore, archiveBefore, eventsBefore)
}

func (s pgStore) RequestSent(ctx context.Context, id, outboxID int64, at time.Time) error {
	return s.st.RequestSent(ctx, id, outboxID, at)
}

func (s pgStore) AskedSince(ctx context.Context, kind string, days []string, since time.Time) (pumpdata.AskedDays, error) {
	if kind == pumpdata.RequestKindRQRD {
		asked, err := s.st.ReferenceAskedSince(ctx, days, since)
		return pumpdata.AskedDays{Asked: asked, Failed: map[string]pumpdata.FailedRequest{}}, err
	}
	return s.st.AskedSince(ctx, kind, days, since)
}

func (s pgStore) PendingReplays(ctx context.Context, limit int) ([]pumpdata.ReplayRequest, error) {
	return s.st.PendingReplays(ctx, limit)
}

type pgTx struct{ tx *store.Tx }

func (t pgTx) CurrentRequest(ctx context.Context, kind string) (*pumpdata.Request, error) {
	return t.tx.PendingRequest(ctx, kind)
}

func (t pgTx) Savepoint(ctx context.Context) (pump.Tx, error) {
	sp, err := t.tx.Savepoint(ctx)
	if err != nil {
		return nil, err
	}
	return pgTx{sp}, nil
}

func (t pgTx) Commit(ctx context.Context) error { return t.tx.Commit(ctx) }

func (t pgTx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

func (t pgTx) Prefetch(ctx context.Context, req pumpdata.PrefetchRequest) (*pumpdata.Prefetched, error) {
	if len(req.MessageIDs) == 0 && len(req.IdentityKeys) == 0 {
		set, err := t.tx.LoadSet(ctx, req.FLIDs, req.Versions, req.Cache)
		if err != nil {
			return nil, err
		}
		return &pumpdata.Prefetched{Set: set}, nil
	}
	return t.tx.Prefetch(ctx, req)
}

// Write makes the calls store has for each part: RecordResult for one
// result alone (a message given up), WriteSet for a working set alone,
// FinishBatch for the rest (two round trips whatever the batch).
func (t pgTx) Write(ctx context.Context, w pump.Writes) error {
	if len(w.Reused) > 0 {
		if err := t.tx.RetireReusedIDs(ctx, w.Reused); err != nil {
			return err
		}
	}
	if len(w.Reference) > 0 {
		if err := t.tx.ApplyReference(ctx, w.Reference); err != nil {
			return err
		}
	}
	switch {
	case len(w.Archive) == 0 && w.Set == nil && len(w.Results) == 1:
		if err := t.tx.RecordResult(ctx, w.Results[0]); err != nil {
			return err
		}
	case len(w.Archive) == 0 && len(w.Results) == 0 && w.Set != nil:
		if err := t.tx.WriteSet(ctx, w.Set); err != nil {
			return err
		}
	case len(w.Archive) > 0 || len(w.Results) > 0:
		if err := t.tx.FinishBatch(ctx, w.Archive, w.Set, w.Results); err != nil {
			return err
		}
	}
	if w.Replay != nil {
		return t.tx.FinishReplay(ctx, *w.Replay, w.ReplayNote)
	}
	return nil
}

func (t pgTx) RequestedBefore(ctx context.Context, kind, day, receiver string) (bool, error) {
	return t.tx.RequestedBefore(ctx, kind, day, receiver)
}

func (t pgTx) ApplySnapshot(ctx context.Context, meta engine.Meta, snap pumpdata.Snapshot) (pumpdata.SnapshotEffect, error) {
	return t.tx.ApplySnapshot(ctx, meta, snap)
}

func (t pgTx) OpenRequest(ctx context.Context, kind, day, receiver, start, end, routingID string, seqn int) (*pumpdata.Request, error) {
	if typ, ok := pumpdata.ReferenceRequestType(kind); ok {
		return t.tx.OpenReferenceRequest(ctx, typ, receiver, routingID, seqn)
	}
	return t.tx.OpenRequest(ctx, kind, day, receiver, start, end, routingID, seqn)
}

func (t pgTx) SettleRequest(ctx context.Context, id int64, s pumpdata.RequestSettlement) error {
	switch s.Status {
	case pumpdata.RequestCompleted:
		return t.tx.CompleteRequest(ctx, id, s.MessageID)
	case pumpdata.RequestTimedOut:
		return t.tx.TimeOutRequest(ctx, id)
	case pumpdata.RequestPending, pumpdata.RequestFailed:
		if s.Rejection == "" || s.Rejections < 1 {
			return fmt.Errorf("settle request %d %s: no refusal given", id, s.Status)
		}
		return t.tx.RefuseAnswer(ctx, id, s.MessageID, s.Rejections, s.Rejection, s.Status == pumpdata.RequestFailed)
	}
	return fmt.Errorf("settle request %d: %q is no outcome of a request (%s, %s, %s or %s)", id, s.Status,
		pumpdata.RequestCompleted, pumpdata.RequestTimedOut, pumpdata.RequestPending, pumpdata.RequestFailed)
}

func (t pgTx) ReplaySource(ctx context.Context, id int64) (pumpdata.ReplaySource, error) {
	return t.tx.ReplaySource(ctx, id)
}

func (t pgTx) Sweep(ctx context.Context, meta engine.Meta, job pump.Job) (pump.Swept, error) {
	if err := job.Check(); err != nil {
		return pump.Swept{}, err
	}
	switch {
	case job.History != nil:
		n, err := t.tx.SweepHistory(ctx, meta, *job.History, job.Limit)
		return pump.Swept{Flights: n}, err
	case !job.NullDayBefore.IsZero():
		n, err := t.tx.SweepNullDay(ctx, meta, job.NullDayBefore, job.Limit)
		return pump.Swept{Flights: n}, err
	default:
		days, err := t.tx.PruneLedger(ctx, job.LedgerBefore)
		return pump.Swept{Days: days}, err
	}
}

var (
	_ pump.Store = pgStore{}
	_ pump.Tx    = pgTx{}
)
