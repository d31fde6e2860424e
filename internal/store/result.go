package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Processing statuses (proc_state.status, mailbox result column).
const (
	StatusSucceeded = "SUCCEEDED"
	StatusSkipped   = "SKIPPED"
	StatusDead      = "DEAD"
	StatusFailed    = "FAILED"
)

// Result is a message's processing outcome.
type Result struct {
	MessageID     int64
	IdentityKey   string
	PayloadDigest []byte
	Type, Styp    string
	Status        string
	// Reason is the machine-readable code for anything not SUCCEEDED.
	Reason string
	// Note is the short human text written back to the mailbox.
	Note       string
	Flags      []string
	ReceivedAt time.Time
}

func (r Result) terminal() bool {
	return r.Status == StatusSucceeded || r.Status == StatusSkipped || r.Status == StatusDead
}

// RecordResult writes the message's processing state and, for a terminal
// result, the backfill intent, inside the message's transaction (SPEC §2.2):
// a crash after commit leaves the intent to be retried, never lost. It is
// the one-message form of what FinishBatch writes for a batch.
func (t *Tx) RecordResult(ctx context.Context, r Result) error {
	b := &pgx.Batch{}
	t.queueResults(b, []Result{r})
	if err := t.sendBatch(ctx, b); err != nil {
		return fmt.Errorf("record result of message %d: %w", r.MessageID, err)
	}
	return nil
}
