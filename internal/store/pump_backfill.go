package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Backfill is a committed result waiting to be written to the mailbox.
type Backfill = pumpdata.Backfill

// A backfill intent is one backfill_todo row per transaction (a batch, a
// replay, a message given up): the ids of the messages it finished and the
// time written back as processed (processing rules R10.2). The result and note
// written back are the message's own, from proc_state, which the same
// transaction wrote. A message id may be in more than one intent (a replay
// while its write-back is pending): it is written back once, with the
// latest time.

// queueIntent registers one intent for ids in the transaction's batch.
func (t *Tx) queueIntent(b *pgx.Batch, ids []int64) {
	if len(ids) == 0 {
		return
	}
	b.Queue(`INSERT INTO backfill_todo (message_ids, processed_at) VALUES ($1, $2)`, ids, t.now)
}

// PendingBackfills returns up to limit messages with a registered intent,
// lowest id first.
func (s *Store) PendingBackfills(ctx context.Context, limit int) ([]Backfill, error) {
	rows, err := s.pool.Query(ctx, `SELECT m.id, p.status, coalesce(p.note, ''), max(b.processed_at), p.received_at
		FROM backfill_todo b CROSS JOIN LATERAL unnest(b.message_ids) AS m(id)
		JOIN proc_state p ON p.message_id = m.id
		GROUP BY m.id, p.status, p.note, p.received_at
		ORDER BY m.id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("read backfill intents: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Backfill])
	if err != nil {
		return nil, fmt.Errorf("read backfill intents: %w", err)
	}
	return out, nil
}

// clearIntents takes ids ($1) out of every intent: an intent left without
// ids is deleted (the usual case: its batch was written back whole), one
// that keeps some is cut down to them. The intents are locked first, in
// one order (two callers cannot deadlock), so a concurrent change of one
// (RetireReusedIDs in a batch's transaction) is waited for and read as
// committed, never overwritten with a stale list.
// Linear in the pending ids: hash joins, no list compared with every row.
const clearIntents = `
	WITH gone AS (SELECT DISTINCT unnest($1::bigint[]) AS id),
	locked AS (SELECT batch_id, message_ids FROM backfill_todo ORDER BY batch_id FOR UPDATE),
	cut AS (
		SELECT l.batch_id, array_agg(m.id ORDER BY m.n) FILTER (WHERE g.id IS NULL) AS keep, count(g.id) AS hits
		FROM locked l CROSS JOIN LATERAL unnest(l.message_ids) WITH ORDINALITY AS m(id, n)
		LEFT JOIN gone g ON g.id = m.id
		GROUP BY l.batch_id),
	emptied AS (DELETE FROM backfill_todo b USING cut c WHERE b.batch_id = c.batch_id AND c.hits > 0 AND c.keep IS NULL)
	UPDATE backfill_todo b SET message_ids = c.keep FROM cut c WHERE b.batch_id = c.batch_id AND c.hits > 0 AND c.keep IS NOT NULL`

// BackfillDone clears the intents of rows the mailbox now carries.
func (s *Store) BackfillDone(ctx context.Context, ids []int64) error {
	if _, err := s.pool.Exec(ctx, clearIntents, ids); err != nil {
		return fmt.Errorf("clear the backfill intents of %d messages: %w", len(ids), err)
	}
	return nil
}

// BackfillFailed records a failed attempt on every intent holding one of
// ids; the intents stay for a retry.
func (s *Store) BackfillFailed(ctx context.Context, ids []int64, cause error) error {
	if _, err := s.pool.Exec(ctx, `UPDATE backfill_todo SET attempts = attempts + 1, last_error = $2
		WHERE batch_id IN (SELECT b.batch_id FROM backfill_todo b CROSS JOIN LATERAL unnest(b.message_ids) AS m(id)
			JOIN (SELECT DISTINCT unnest($1::bigint[]) AS id) f ON f.id = m.id)`,
		ids, cleanText(cause.Error())); err != nil {
		return fmt.Errorf("note backfill failure: %w", err)
	}
	return nil
}

// CountBackfills counts the messages with a registered intent (not the
// intents: one holds a whole batch).
func (s *Store) CountBackfills(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(DISTINCT m.id) FROM backfill_todo b CROSS JOIN LATERAL unnest(b.message_ids) AS m(id)`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count backfill intents: %w", err)
	}
	return n, nil
}
