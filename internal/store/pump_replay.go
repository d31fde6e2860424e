package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Replays as the pump runs them: the pending requests, the original
// message's archived text and state, the outcome; the ops API and
// `flightfeed replay` record and read requests (readapi_replay.go).

// PendingReplays lists up to limit PENDING replay requests, oldest first.
func (s *Store) PendingReplays(ctx context.Context, limit int) ([]ReplayRequest, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+replayColumns+` FROM replay_request WHERE state = 'PENDING' ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list pending replays: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanReplay)
	if err != nil {
		return nil, fmt.Errorf("list pending replays: %w", err)
	}
	return out, nil
}

// ReplaySource is what a replay needs of the original message: its
// archived raw text and its processing state.
type ReplaySource = pumpdata.ReplaySource

// ReplaySource reads message id's archived raw text and processing state
// and locks the state row for the transaction.
func (t *Tx) ReplaySource(ctx context.Context, id int64) (ReplaySource, error) {
	var src ReplaySource
	err := t.tx.QueryRow(ctx, `SELECT status, coalesce(reason, ''), coalesce(note, ''), received_at FROM proc_state WHERE message_id = $1 FOR UPDATE`, id).
		Scan(&src.State.Status, &src.State.Reason, &src.State.Note, &src.ReceivedAt)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return src, fmt.Errorf("read message %d for replay: %w", id, err)
	}
	err = t.tx.QueryRow(ctx, `SELECT received_at, body, truncated FROM msg_archive WHERE message_id = $1`, id).Scan(&src.ReceivedAt, &src.Body, &src.Truncated)
	switch {
	case err == nil:
		src.Archived = true
	case !errors.Is(err, pgx.ErrNoRows):
		return src, fmt.Errorf("read archive of message %d for replay: %w", id, err)
	}
	return src, nil
}

// FinishReplay records a replay's outcome: the request's state and result
// and, when it ran (DONE), the original message's new note in proc_state
// and a backfill intent of its own that writes that note to its mailbox
// row (its result column keeps the original status).
func (t *Tx) FinishReplay(ctx context.Context, req ReplayRequest, mailboxNote string) error {
	tag, err := t.tx.Exec(ctx, `UPDATE replay_request SET state = $2, finished_at = $3, result = NULLIF($4, ''), reason = NULLIF($5, ''), note = NULLIF($6, '')
		WHERE id = $1 AND state = 'PENDING'`, req.ID, req.State, t.now, req.Result, req.Reason, cleanText(req.Note))
	if err != nil {
		return fmt.Errorf("finish replay request %d: %w", req.ID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("finish replay request %d: it is no longer pending", req.ID)
	}
	if req.State != ReplayDone {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE proc_state SET note = $2, updated_at = $3 WHERE message_id = $1`, req.MessageID, cleanText(mailboxNote), t.now)
	t.queueIntent(b, []int64{req.MessageID})
	if err := t.sendBatch(ctx, b); err != nil {
		return fmt.Errorf("finish replay request %d: %w", req.ID, err)
	}
	return nil
}
