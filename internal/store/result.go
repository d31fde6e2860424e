package store

import (
	"context"
	"fmt"
	"time"
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
// a crash after commit leaves the intent to be retried, never lost.
func (t *Tx) RecordResult(ctx context.Context, r Result) error {
	var finished *time.Time
	if r.terminal() {
		finished = &t.now
	}
	flags := r.Flags
	if flags == nil {
		flags = []string{}
	}
	_, err := t.tx.Exec(ctx, `
		INSERT INTO proc_state (message_id, identity_key, payload_digest, msg_type, msg_styp, status, reason, note,
			flags, attempts, received_at, first_seen_at, updated_at, finished_at)
		VALUES ($1, NULLIF($2, ''), $3, NULLIF($4, ''), NULLIF($5, ''), $6, NULLIF($7, ''), NULLIF($8, ''), $9, 1, $10, $11, $11, $12)
		ON CONFLICT (message_id) DO UPDATE SET
			identity_key = EXCLUDED.identity_key, payload_digest = EXCLUDED.payload_digest,
			msg_type = EXCLUDED.msg_type, msg_styp = EXCLUDED.msg_styp, status = EXCLUDED.status,
			reason = EXCLUDED.reason, note = EXCLUDED.note, flags = EXCLUDED.flags,
			attempts = proc_state.attempts + 1, updated_at = EXCLUDED.updated_at, finished_at = EXCLUDED.finished_at`,
		r.MessageID, cleanText(r.IdentityKey), r.PayloadDigest, cleanText(r.Type), cleanText(r.Styp), r.Status,
		r.Reason, cleanText(r.Note), flags, r.ReceivedAt, t.now, finished)
	if err != nil {
		return fmt.Errorf("record result of message %d: %w", r.MessageID, err)
	}
	if !r.terminal() {
		return nil
	}
	if _, err := t.tx.Exec(ctx, `
		INSERT INTO backfill_todo (message_id, result, note, processed_at) VALUES ($1, $2, NULLIF($3, ''), $4)
		ON CONFLICT (message_id) DO UPDATE SET result = EXCLUDED.result, note = EXCLUDED.note, processed_at = EXCLUDED.processed_at`,
		r.MessageID, r.Status, cleanText(r.Note), t.now); err != nil {
		return fmt.Errorf("register backfill of message %d: %w", r.MessageID, err)
	}
	return nil
}
