package pumpdata

import (
	"crypto/sha256"
	"time"
)

// ArchivedRow is one mailbox row for the evidence layer.
type ArchivedRow struct {
	MessageID  int64
	ReceivedAt time.Time
	Size       int64
	Body       []byte
	// Digest is PayloadDigest(Body), computed once by the caller.
	Digest    []byte
	Truncated bool
	// New says the caller knows the row has no processing state yet (the
	// transaction read none for its id), so nothing of it is archived
	// either (both are written together): a plain INSERT, without ON
	// CONFLICT's extra index probe, lock and WAL record for each row. When
	// false the insert skips an id already archived (a FAILED message
	// retried). A wrong true is not silent: the insert fails and the batch
	// rolls back.
	New bool
}

// PayloadDigest is the digest of a mailbox row's raw text: the archive's
// and the row's identity (with its id and received time). Re-sent copies
// are compared by Result.ContentDigest instead.
func PayloadDigest(body []byte) []byte {
	sum := sha256.Sum256(body)
	return sum[:]
}

// Processing statuses (proc_state.status, mailbox result column).
const (
	StatusSucceeded = "SUCCEEDED"
	StatusSkipped   = "SKIPPED"
	StatusDead      = "DEAD"
	StatusFailed    = "FAILED"
)

// Result is a message's processing outcome.
type Result struct {
	MessageID   int64
	IdentityKey string
	// PayloadDigest is PayloadDigest(raw text); ContentDigest the decoded
	// message's digest without its send time (sis.Message.ContentDigest),
	// which re-sent copies are compared by. Nil when it did not decode.
	PayloadDigest []byte
	ContentDigest []byte
	Type, Styp    string
	Status        string
	// Reason is the machine-readable code for anything not SUCCEEDED.
	Reason string
	// Note is the short human text written back to the mailbox.
	Note       string
	Flags      []string
	ReceivedAt time.Time
	// New says the caller knows the message has no processing state yet
	// (the transaction read none for its id): it is a plain INSERT (see
	// ArchivedRow.New). When false it is an upsert. The backfill intent
	// is always a new row (one per batch).
	New bool
	// Attempts is how many processing attempts the result records (0
	// counts as 1): more when attempts before it failed where their
	// FAILED(INFRA) could not be written (the database was the failing
	// dependency), so the first result that reaches the database counts
	// them too. proc_state.attempts adds it up.
	Attempts int
}

// Terminal reports a result that is final for the message.
func (r Result) Terminal() bool {
	return r.Status == StatusSucceeded || r.Status == StatusSkipped || r.Status == StatusDead
}

// Backfill is a committed result waiting to be written to the mailbox.
type Backfill struct {
	MessageID int64
	Result    string
	Note      string
	Processed time.Time
	// Received is the message's received time: the result is written only
	// to the mailbox row with this id and this received time, never to a
	// later row that reused the id.
	Received time.Time
}

// ReusedID is a mailbox row whose id was processed before as another
// message (ProcState.Same said no).
type ReusedID struct {
	MessageID int64
	// Received and Digest identify the new row.
	Received time.Time
	Digest   []byte
}
