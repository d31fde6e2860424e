package pump

import (
	"time"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Status is a point-in-time report of one feed's pump, for the operator's
// status reporter, metrics and `/readyz`. The zero value means "not running".
type Status struct {
	// Running is true while the pump loop runs (it holds the feed's lease).
	Running bool
	// Holder is the identity that runs the pump; Epoch its fencing epoch.
	Holder string
	Epoch  int64
	// Since is when this pump started leading.
	Since time.Time

	// LastProcessedID is the newest mailbox row id with a terminal state.
	LastProcessedID int64
	// HeadID is the mailbox row at the FIFO head (0 when empty);
	// HeadBlockedSince is set while the head keeps failing (FAILED(INFRA)
	// or UNSUPPORTED retries), with the last error.
	HeadID           int64
	HeadBlockedSince time.Time
	HeadLastError    string
	// QueueDepth counts unprocessed VALID mailbox rows; Lag is the age of
	// the oldest of them.
	QueueDepth int64
	Lag        time.Duration

	// Counts are results since the pump started: SUCCEEDED, SKIPPED and
	// DEAD once per message, FAILED once per attempt that ended FAILED
	// (an UNSUPPORTED message retried, or made DEAD after the retries;
	// the head's infrastructure failure once it is tried alone, FAILED
	// (INFRA) in proc_state when the database could take it).
	Counts map[string]int64
	// MessagesPerSecond is the rate of terminal results over the last
	// completed window of at least 10 s (0 until the first window ends).
	MessagesPerSecond float64

	// Reachability of the mailbox and the database, with the last error
	// when not (Kafka is the dispatcher's: feedrun.Status).
	MailboxReachable  bool
	MailboxError      string
	DatabaseReachable bool
	DatabaseError     string

	// IDsReused counts mailbox rows that reused the id of another, already
	// processed message (processed as new); IDReusedLast and IDReusedAt
	// name the newest.
	IDsReused    int64
	IDReusedLast int64
	IDReusedAt   time.Time

	// BackfillPending counts committed results not yet written back.
	BackfillPending int64

	// FailedRequests are the request horizon's days whose full-day request
	// FAILED (its answers refused the same way twice in a row), by day:
	// the pump does not ask for them until an operator re-requests them.
	FailedRequests []pumpdata.FailedRequest
}
