package pump

import (
	"context"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
)

// The pump's ports: what it needs of the mailbox (Inbox) and of the
// feed's database (Store, Tx), as small interfaces it owns, so its loop,
// batches and failure handling can be tested against services in memory.
// The real ones are *mailbox.Mailbox and Postgres(*store.Store); what
// crosses the ports (pumpdata.Result, engine.WorkingSet, mailbox.Row, ...) is
// plain data.

// Inbox is what the pump needs of the shared mailbox; *mailbox.Mailbox is
// the real one.
type Inbox interface {
	// Head reads up to limit unprocessed rows in FIFO order without the
	// rows in skip, their bodies within budget bytes (mailbox.Mailbox.Head).
	Head(ctx context.Context, limit int, budget, maxBytes int64, skip map[int64]bool) ([]mailbox.Row, error)
	// Backfill writes results back to their rows.
	Backfill(ctx context.Context, results []mailbox.Result) error
	// Depth counts unprocessed rows and returns the oldest one's receipt.
	Depth(ctx context.Context) (int64, time.Time, error)
	// SendRequest inserts an outbound request and returns its row id.
	SendRequest(ctx context.Context, routingID string, body []byte, now time.Time) (int64, error)
	// FindRequest finds an outbound request of routingID inserted at or
	// after since whose body carries the SEQN seqn.
	FindRequest(ctx context.Context, routingID, seqn string, since time.Time) (int64, bool, error)
	Close() error
}

// Store is what the pump needs of the feed's database: fenced write
// transactions, and the few writes that run outside one.
type Store interface {
	// Begin starts a write transaction that fails with pumpdata.ErrFenced
	// unless epoch is still the current fencing epoch.
	Begin(ctx context.Context, epoch int64) (Tx, error)
	Session
	BackfillQueue
	// AppendTraceLog appends a snapshot's trace row outside any message
	// transaction.
	AppendTraceLog(ctx context.Context, e pumpdata.TraceEntry) error
	// Prune deletes trace rows, archived bodies and delivered events older
	// than the cut-offs.
	Prune(ctx context.Context, traceBefore, archiveBefore, eventsBefore time.Time) (int64, error)
	// CurrentRequest is the request in flight (nil when none); RequestSent
	// records that it went out.
	CurrentRequest(ctx context.Context, kind string) (*pumpdata.Request, error)
	RequestSent(ctx context.Context, id, outboxID int64, at time.Time) error
	// AskedSince returns which of days had a request of kind sent or
	// answered at or after since (store.Store.AskedSince).
	AskedSince(ctx context.Context, kind string, days []string, since time.Time) (map[string]bool, error)
	// PendingReplays lists up to limit PENDING replay requests, oldest
	// first (`flightfeed replay` records them).
	PendingReplays(ctx context.Context, limit int) ([]pumpdata.ReplayRequest, error)
	// Unanswered is since when the oldest database call in progress has
	// waited, and what it is (zero time: none) (store.Store.Unanswered).
	Unanswered() (since time.Time, what string)
}

// Session is what the pump asks once when it starts, and the database's
// reachability while the head is blocked.
type Session interface {
	// TakeEpoch makes holder the writer and returns its fencing epoch.
	TakeEpoch(ctx context.Context, holder string) (int64, error)
	// RenewEpoch says the holder of epoch is alive (pumpdata.ErrFenced when
	// it no longer holds it).
	RenewEpoch(ctx context.Context, epoch int64) error
	// LastSeqn is the SEQN of the newest request sent (0 when none).
	LastSeqn(ctx context.Context) (int, error)
	Ping(ctx context.Context) error
}

// BackfillQueue holds the results committed but not yet written back to
// the mailbox (backfill intents).
type BackfillQueue interface {
	PendingBackfills(ctx context.Context, limit int) ([]pumpdata.Backfill, error)
	BackfillDone(ctx context.Context, ids []int64) error
	BackfillFailed(ctx context.Context, ids []int64, cause error) error
	CountBackfills(ctx context.Context) (int64, error)
}

// Tx is one fenced write transaction.
type Tx interface {
	// Savepoint starts a nested transaction for one snapshot.
	Savepoint(ctx context.Context) (Savepoint, error)
	Commit(ctx context.Context) error
	// Rollback undoes the transaction; safe after Commit.
	Rollback(ctx context.Context) error
	BatchTx
	RequestTx
	JobTx
	ReplayTx
}

// Savepoint is a nested transaction inside a Tx: committing releases it,
// rolling it back undoes only what was done inside it.
type Savepoint interface {
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
	SnapshotTx
}

// BatchTx reads and writes a batch of messages: one prefetch, the working
// set, the results (store.Tx's own).
type BatchTx interface {
	Prefetch(ctx context.Context, req pumpdata.PrefetchRequest) (*pumpdata.Prefetched, error)
	LoadSet(ctx context.Context, flids []flight.FLID, versions int, cache *pumpdata.StateCache) (*engine.WorkingSet, error)
	WriteSet(ctx context.Context, set *engine.WorkingSet) error
	RetireReusedIDs(ctx context.Context, reused []pumpdata.ReusedID) error
	FinishBatch(ctx context.Context, archive []pumpdata.ArchivedRow, set *engine.WorkingSet, results []pumpdata.Result) error
	// RecordResult writes one result alone (a message given up).
	RecordResult(ctx context.Context, r pumpdata.Result) error
}

// SnapshotTx applies a snapshot and settles the request it answers.
type SnapshotTx interface {
	PendingRequest(ctx context.Context, kind string) (*pumpdata.Request, error)
	RequestedBefore(ctx context.Context, kind, day, receiver string) (bool, error)
	ApplySnapshot(ctx context.Context, meta engine.Meta, snap pumpdata.Snapshot) (pumpdata.SnapshotEffect, error)
	CompleteRequest(ctx context.Context, id, msgID int64) error
}

// RequestTx opens and times out the pump's full-day requests.
type RequestTx interface {
	OpenRequest(ctx context.Context, kind, day, receiver, start, end, routingID string, seqn int) (*pumpdata.Request, error)
	TimeOutRequest(ctx context.Context, id int64) error
}

// ReplayTx reads a DEAD message for its replay and records the outcome.
type ReplayTx interface {
	ReplaySource(ctx context.Context, id int64) (pumpdata.ReplaySource, error)
	FinishReplay(ctx context.Context, req pumpdata.ReplayRequest, mailboxNote string) error
}

// JobTx runs the lifecycle jobs' transactions.
type JobTx interface {
	SweepHistory(ctx context.Context, meta engine.Meta, c pumpdata.HistoryCutoffs, limit int) (int, error)
	SweepNullDay(ctx context.Context, meta engine.Meta, before time.Time, limit int) (int, error)
	PruneLedger(ctx context.Context, cutoff string) ([]string, error)
}

// Postgres is the real Store: the feed's database. Every method but Begin
// and Savepoint is *store.Store's or *store.Tx's own; those two return the
// ports here, as Go has no covariant results.
func Postgres(st *store.Store) Store { return pgStore{st} }

type pgStore struct{ *store.Store }

func (s pgStore) Begin(ctx context.Context, epoch int64) (Tx, error) {
	tx, err := s.Store.Begin(ctx, epoch)
	if err != nil {
		return nil, err
	}
	return pgTx{tx}, nil
}

type pgTx struct{ *store.Tx }

func (t pgTx) Savepoint(ctx context.Context) (Savepoint, error) {
	sp, err := t.Tx.Savepoint(ctx)
	if err != nil {
		return nil, err
	}
	return sp, nil
}

var (
	_ Inbox = (*mailbox.Mailbox)(nil)

	_ Store         = pgStore{}
	_ Session       = (*store.Store)(nil)
	_ BackfillQueue = (*store.Store)(nil)

	_ Tx         = pgTx{}
	_ Savepoint  = (*store.Tx)(nil)
	_ BatchTx    = (*store.Tx)(nil)
	_ SnapshotTx = (*store.Tx)(nil)
	_ RequestTx  = (*store.Tx)(nil)
	_ JobTx      = (*store.Tx)(nil)
	_ ReplayTx   = (*store.Tx)(nil)
)
