package store

import (
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
	Truncated  bool
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
}

// PendingBackfills returns registered intents, oldest first.
func (s *Store) PendingBackfills(ctx context.Context, limit int) ([]Backfill, error) {
	rows, err := s.pool.Query(ctx, `SELECT message_id, result, coalesce(note, ''), processed_at FROM backfill_todo
		ORDER BY message_id LIMIT $1`, limit)
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
