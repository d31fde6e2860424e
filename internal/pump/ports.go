package pump

import (
	"context"
	"fmt"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// The pump's ports: what it needs of the mailbox (Inbox), of the feed's
// database (Store, Tx, and Requests, which both answer, and Answers, what
// the database's errors mean) and of the Kafka topics (Door, the record
// size they accept), declared here in the pump's own terms. What crosses
// them is plain data (package pumpdata, engine.WorkingSet, and Session,
// Writes, Job and Swept here). The real ones are adapters outside the
// pump, which imports no driver: *mailbox.Mailbox (MySQL) is the Inbox,
// internal/pump/pgstore adapts *store.Store (PostgreSQL) to Store, and a
// *recsize.Measure (the Kafka producer's codec) is the Door; package
// feedrun wires them. internal/pump/pumptest keeps a mailbox and a feed
// database in memory for the pump's tests.

// Inbox is what the pump needs of the shared mailbox; *mailbox.Mailbox is
// the real one.
type Inbox interface {
	// Head reads up to limit unprocessed rows in FIFO order without the
	// rows in skip, their bodies within budget bytes (mailbox.Mailbox.Head);
	// more says the limit or the budget may have left rows at the head.
	Head(ctx context.Context, limit int, budget, maxBytes int64, skip map[int64]bool) (rows []pumpdata.Row, more bool, err error)
	// Backfill writes committed results back to their rows, each only to
	// the row with its id and received time.
	Backfill(ctx context.Context, results []pumpdata.Backfill) error
	// Depth counts unprocessed rows and returns the oldest one's receipt.
	Depth(ctx context.Context) (int64, time.Time, error)
	// SendRequest inserts an outbound request and returns its row id.
	SendRequest(ctx context.Context, routingID string, body []byte, now time.Time) (int64, error)
	// FindRequest finds an outbound request of routingID inserted at or
	// after since whose body carries the SEQN seqn.
	FindRequest(ctx context.Context, routingID, seqn string, since time.Time) (int64, bool, error)
}

// Door measures the Kafka records a message would publish against the
// largest record the topics accept (kafka.maxRecordBytes, or less when a
// topic accepts less): the engine's door (engine.Door), which refuses a
// message STATE_TOO_LARGE. *recsize.Measure is the real one, shared with
// the dispatcher, which lowers it.
type Door interface {
	engine.Door
}

// Requests is the one request lookup, asked both outside a transaction
// (the requests state machine) and inside one (a snapshot settling the
// request it answers).
type Requests interface {
	// CurrentRequest is the live (PENDING) request of kind, nil when none.
	CurrentRequest(ctx context.Context, kind string) (*pumpdata.Request, error)
}

// Answers reads what an error of the feed's database says about the
// message whose write caused it: the SQLSTATE knowledge stays with the
// driver in the adapter (store's dberror.go), and the failure matrix
// (Classify, AttemptTrace, RefusalSignature) decides on the answer.
type Answers interface {
	Answer(err error) pumpdata.Answer
}

// Store is what the pump needs of the feed's database: its session
// (fencing epoch, reachability), fenced write transactions, the few
// reads and writes that run outside one, and what its errors mean.
type Store interface {
	Requests
	Answers
	// Start makes holder the writer unless epoch (the fencing epoch a
	// caller took already) is given, and reads the SEQN of the newest
	// request sent, so the 6-digit sequence continues across restarts.
	// It also resolves the trace rows of attempts whose commit failed
	// without an answer (pumpdata.TraceCommitUnknown) from what committed
	// (Session.TracesResolved); a trace log it cannot resolve is no error
	// of Start (Session.TraceErr): the trace log never stops a pump.
	Start(ctx context.Context, holder string, epoch int64) (Session, error)
	// RenewEpoch says the holder of epoch is alive (pumpdata.ErrFenced
	// when it no longer holds it).
	RenewEpoch(ctx context.Context, epoch int64) error
	// Ping checks the database answers (a blocked head's diagnosis).
	Ping(ctx context.Context) error
	// Unanswered is since when the oldest database call in progress has
	// waited, and what it is (zero time: none); it does no I/O.
	Unanswered() (since time.Time, what string)
	// Begin starts a write transaction that fails with pumpdata.ErrFenced
	// unless epoch is still the current fencing epoch.
	Begin(ctx context.Context, epoch int64) (Tx, error)

	// Backfills returns up to limit results committed but not yet written
	// back to the mailbox (backfill intents), lowest id first (none when
	// limit is 0), and how many messages have one in all.
	Backfills(ctx context.Context, limit int) ([]pumpdata.Backfill, int64, error)
	// SettleBackfills clears the intents of ids once the mailbox carries
	// their results (cause nil), or records a failed write-back (cause)
	// on them, which stay for a retry.
	SettleBackfills(ctx context.Context, ids []int64, cause error) error

	// AppendTraceLog appends a snapshot's trace row outside any message
	// transaction.
	AppendTraceLog(ctx context.Context, e pumpdata.TraceEntry) error
	// Prune deletes trace rows, archived bodies and delivered events older
	// than the cut-offs.
	Prune(ctx context.Context, traceBefore, archiveBefore, eventsBefore time.Time) (int64, error)
	// RequestSent records that request id is in the mailbox's outbound
	// table as row outboxID.
	RequestSent(ctx context.Context, id, outboxID int64, at time.Time) error
	// AskedSince returns which of days had a request of kind sent or
	// answered at or after since, and which are held: their request
	// FAILED and no operator re-requested them since. For the kind
	// pumpdata.RequestKindRQRD, days are reference-data lists (SIS
	// TYPEs): Asked are those whose reference-data request was sent or
	// answered, or whose list was replaced whole (a DNLD or RESP, requested
	// or not), at or after since; none is held.
	AskedSince(ctx context.Context, kind string, days []string, since time.Time) (pumpdata.AskedDays, error)
	// PendingReplays lists up to limit PENDING replay requests, oldest
	// first (`flightfeed replay` records them).
	PendingReplays(ctx context.Context, limit int) ([]pumpdata.ReplayRequest, error)
}

// Session is what Store.Start answers.
type Session struct {
	// Epoch is the pump's fencing epoch.
	Epoch int64
	// LastSeqn is the SEQN of the newest request sent (0 when none).
	LastSeqn int
	// TracesResolved counts the COMMIT_UNKNOWN trace rows Start resolved
	// to COMMITTED, REPLAY_SKIPPED or ROLLED_BACK; TraceErr is why it
	// could not.
	TracesResolved int
	TraceErr       error
}

// Tx is one fenced write transaction, or a savepoint inside one.
type Tx interface {
	Requests
	// Savepoint starts a nested transaction (for one snapshot): committing
	// it releases it, rolling it back undoes only what was done inside it.
	Savepoint(ctx context.Context) (Tx, error)
	Commit(ctx context.Context) error
	// Rollback undoes the transaction; safe after Commit.
	Rollback(ctx context.Context) error

	// Prefetch reads what a batch needs in one round trip: processing
	// states, prior copies, and the working set of the flights named
	// (with a pool of state versions). With no message ids and no
	// identity keys it loads the working set alone (a reload after a
	// snapshot).
	Prefetch(ctx context.Context, req pumpdata.PrefetchRequest) (*pumpdata.Prefetched, error)
	// Write writes what the pump decided (Writes), in the order of its
	// fields.
	Write(ctx context.Context, w Writes) error

	// RequestedBefore reports whether a request of kind for day was ever
	// sent to receiver (or recorded without a receiver).
	RequestedBefore(ctx context.Context, kind, day, receiver string) (bool, error)
	// ApplySnapshot applies a snapshot (processing rules R5.1); a decided refusal
	// is a *snapshot.Rejection and leaves nothing written.
	ApplySnapshot(ctx context.Context, meta engine.Meta, snap pumpdata.Snapshot) (pumpdata.SnapshotEffect, error)
	// OpenRequest registers a new live request of kind for day to
	// receiver, expiring the previous live one. A reference-data request
	// (kind pumpdata.ReferenceRequestKind) has no day, start or end.
	OpenRequest(ctx context.Context, kind, day, receiver, start, end, routingID string, seqn int) (*pumpdata.Request, error)
	// SettleRequest records what befell the pending request id: it ends
	// COMPLETED (answered by s.MessageID) or TIMED_OUT, or an answer
	// (s.MessageID) was refused (s.Rejection, s.Rejections in a row): it
	// stays PENDING, or ends FAILED when given up.
	SettleRequest(ctx context.Context, id int64, s pumpdata.RequestSettlement) error
	// ReplaySource reads message id's archived raw text and processing
	// state and locks the state for the transaction.
	ReplaySource(ctx context.Context, id int64) (pumpdata.ReplaySource, error)
	// Sweep runs one lifecycle job (Job) in the transaction.
	Sweep(ctx context.Context, meta engine.Meta, job Job) (Swept, error)
}

// Writes are what a transaction writes beside snapshots, each part
// optional, applied in this order.
type Writes struct {
	// Reused are mailbox rows whose id was processed before as another
	// message: what is known of the predecessor is retired first, so the
	// new row is processed as a new message.
	Reused []pumpdata.ReusedID
	// Archive are the raw rows for the evidence layer, Set the working
	// set's effects (emptied once written), Results the messages'
	// processing states with one backfill intent for the terminal ones.
	Archive []pumpdata.ArchivedRow
	Set     *engine.WorkingSet
	Results []pumpdata.Result
	// Reference are the reference-data messages' changes, in mailbox
	// order.
	Reference []pumpdata.ReferenceChange
	// Replay, when set, records the replay request's outcome (its State,
	// Result, Reason, Note); when it ran (DONE), ReplayNote is the original
	// message's new note, which a backfill intent of its own writes to its
	// mailbox row.
	Replay     *pumpdata.ReplayRequest
	ReplayNote string
}

// Job is one lifecycle job's transaction (processing rules R8): exactly one of
// History (move up to Limit finished flights to history), NullDayBefore
// (retire up to Limit flights without an operation day unchanged since)
// and LedgerBefore (delete the day ledger of days before, YYYY-MM-DD).
type Job struct {
	History       *pumpdata.HistoryCutoffs
	NullDayBefore time.Time
	LedgerBefore  string
	Limit         int
}

// Check says why j is not exactly one job (nil when it is).
func (j Job) Check() error {
	n := 0
	if j.History != nil {
		n++
	}
	if !j.NullDayBefore.IsZero() {
		n++
	}
	if j.LedgerBefore != "" {
		n++
	}
	if n != 1 {
		return fmt.Errorf("lifecycle job names %d jobs: want exactly one of History, NullDayBefore, LedgerBefore", n)
	}
	return nil
}

// Swept is what a Job did: the flights it moved, the ledger days it
// deleted.
type Swept struct {
	Flights int
	Days    []string
}
