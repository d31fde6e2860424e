package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

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
	if _, err := s.pool.Exec(ctx, `DELETE FROM backfill_todo WHERE message_id IN (SELECT unnest($1::bigint[]))`, ids); err != nil {
		return fmt.Errorf("clear %d backfill intents: %w", len(ids), err)
	}
	return nil
}

// BackfillFailed records a failed attempt; the intent stays for a retry.
func (s *Store) BackfillFailed(ctx context.Context, ids []int64, cause error) error {
	if _, err := s.pool.Exec(ctx, `UPDATE backfill_todo SET attempts = attempts + 1, last_error = $2 WHERE message_id IN (SELECT unnest($1::bigint[]))`,
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
