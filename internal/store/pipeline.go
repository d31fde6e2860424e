package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// ArchivedRow is one mailbox row for the evidence layer.
type ArchivedRow struct {
	MessageID  int64
	ReceivedAt time.Time
	Size       int64
	Body       []byte
	// Digest is Digest(Body), computed once by the caller.
	Digest    []byte
	Truncated bool
}

// Digest is the payload digest used for the archive and re-send detection.
func Digest(body []byte) []byte {
	sum := sha256.Sum256(body)
	return sum[:]
}

// ProcState is what proc_state knows about one mailbox row.
type ProcState struct {
	Status   string
	Reason   string
	Note     string
	Attempts int
	Finished time.Time
	// ReceivedAt and Digest identify the message the row id stood for.
	ReceivedAt time.Time
	Digest     []byte
}

// Same reports whether a mailbox row with this received time and payload
// digest is the message this state records. Mailbox ids alone are not an
// identity: they restart after a TRUNCATE, a restore or a reset
// AUTO_INCREMENT, and a row with a known id but another received time or
// payload is a new message (see RetireReusedIDs).
func (p ProcState) Same(received time.Time, digest []byte) bool {
	return p.ReceivedAt.Equal(received) && bytes.Equal(p.Digest, digest)
}

// Terminal reports a state that is final for the row.
func (p ProcState) Terminal() bool {
	return p.Status == StatusSucceeded || p.Status == StatusSkipped || p.Status == StatusDead
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

// PendingBackfills returns registered intents, oldest first.
func (s *Store) PendingBackfills(ctx context.Context, limit int) ([]Backfill, error) {
	rows, err := s.pool.Query(ctx, `SELECT b.message_id, b.result, coalesce(b.note, ''), b.processed_at, p.received_at
		FROM backfill_todo b JOIN proc_state p USING (message_id)
		ORDER BY b.message_id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("read backfill intents: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Backfill])
	if err != nil {
		return nil, fmt.Errorf("read backfill intents: %w", err)
	}
	return out, nil
}

// BackfillDone deletes the intents of rows the mailbox now carries.
func (s *Store) BackfillDone(ctx context.Context, ids []int64) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM backfill_todo WHERE message_id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("clear %d backfill intents: %w", len(ids), err)
	}
	return nil
}

// BackfillFailed records a failed attempt; the intent stays for a retry.
func (s *Store) BackfillFailed(ctx context.Context, ids []int64, cause error) error {
	if _, err := s.pool.Exec(ctx, `UPDATE backfill_todo SET attempts = attempts + 1, last_error = $2 WHERE message_id = ANY($1)`,
		ids, cleanText(cause.Error())); err != nil {
		return fmt.Errorf("note backfill failure: %w", err)
	}
	return nil
}

// CountBackfills counts registered intents.
func (s *Store) CountBackfills(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM backfill_todo`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count backfill intents: %w", err)
	}
	return n, nil
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// cleanText makes arbitrary bytes storable as PostgreSQL text: valid UTF-8,
// no NUL.
func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// ReusedID is a mailbox row whose id was processed before as another
// message (ProcState.Same said no).
type ReusedID struct {
	MessageID int64
	// Received and Digest identify the new row.
	Received time.Time
	Digest   []byte
}

// RetireReusedIDs moves what the database knows of each id's predecessor
// (its processing state, its archived raw text, a backfill intent that
// never landed) into msg_id_reuse, so the new row is processed as a new
// message and nothing of the old one is lost. One statement.
func (t *Tx) RetireReusedIDs(ctx context.Context, reused []ReusedID) error {
	if len(reused) == 0 {
		return nil
	}
	ids, received, digests := make([]int64, len(reused)), make([]time.Time, len(reused)), make([][]byte, len(reused))
	for i, r := range reused {
		ids[i], received[i], digests[i] = r.MessageID, r.Received, r.Digest
	}
	// Data-modifying CTEs all run, referenced or not (the backfill one).
	_, err := t.tx.Exec(ctx, `
		WITH k AS (SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::bytea[]) AS u(id, received, digest)),
		old AS (DELETE FROM proc_state p USING k WHERE p.message_id = k.id
			RETURNING p.*, k.received AS new_received, k.digest AS new_digest),
		arch AS (DELETE FROM msg_archive a USING k WHERE a.message_id = k.id
			RETURNING a.message_id, a.byte_size, a.truncated, a.body),
		intent AS (DELETE FROM backfill_todo b USING k WHERE b.message_id = k.id RETURNING b.message_id)
		INSERT INTO msg_id_reuse (message_id, detected_at, new_received_at, new_payload_digest, old_received_at,
			old_payload_digest, old_identity_key, old_msg_type, old_msg_styp, old_status, old_reason, old_note, old_flags,
			old_finished_at, old_byte_size, old_truncated, old_body)
		SELECT old.message_id, $4, old.new_received, old.new_digest, old.received_at, old.payload_digest, old.identity_key,
			old.msg_type, old.msg_styp, old.status, old.reason, old.note, old.flags, old.finished_at,
			arch.byte_size, arch.truncated, arch.body
		FROM old LEFT JOIN arch USING (message_id)`, ids, received, digests, t.now)
	if err != nil {
		return fmt.Errorf("retire %d reused mailbox ids: %w", len(reused), err)
	}
	return nil
}
