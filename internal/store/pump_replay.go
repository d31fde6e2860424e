package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Replay policies (SPEC §2.8): as-new runs the archived raw text through
// today's rules as if it had just arrived; skip-conflicts applies a
// day-mismatch full-day snapshot without its conflicting FLIDs.
const (
	ReplayAsNew         = pumpdata.ReplayAsNew
	ReplaySkipConflicts = pumpdata.ReplaySkipConflicts
)

// Replay request states.
const (
	ReplayPending = pumpdata.ReplayPending
	ReplayDone    = pumpdata.ReplayDone
	ReplayRefused = pumpdata.ReplayRefused
)

// ReplayRequest is one row of replay_request.
type ReplayRequest = pumpdata.ReplayRequest

// ReplayRefusedError is a replay request refused before it was recorded:
// the message is not DEAD, was replayed already, has no archived raw text,
// or the policy does not fit it.
type ReplayRefusedError struct {
	MessageID int64
	Why       string
}

func (e *ReplayRefusedError) Error() string {
	return fmt.Sprintf("replay of message %d refused: %s", e.MessageID, e.Why)
}

// ReplayFits says why policy cannot replay a message in status with
// reason ("" when it can): only DEAD messages are replayed, and
// skip-conflicts only a day-mismatch snapshot.
func ReplayFits(policy, status, reason string) string {
	return pumpdata.ReplayFits(policy, status, reason)
}

// RequestReplay records a PENDING replay request for message id, or
// refuses it at once (*ReplayRefusedError).
func (s *Store) RequestReplay(ctx context.Context, id int64, policy string) (ReplayRequest, error) {
	if policy != ReplayAsNew && policy != ReplaySkipConflicts {
		return ReplayRequest{}, fmt.Errorf("replay policy %q: must be %s or %s", policy, ReplayAsNew, ReplaySkipConflicts)
	}
	var req ReplayRequest
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status, reason string
		err := tx.QueryRow(ctx, `SELECT status, coalesce(reason, '') FROM proc_state WHERE message_id = $1 FOR SHARE`, id).Scan(&status, &reason)
		if errors.Is(err, pgx.ErrNoRows) {
			return &ReplayRefusedError{id, "this feed never processed a message with that id"}
		}
		if err != nil {
			return fmt.Errorf("read message %d: %w", id, err)
		}
		if why := ReplayFits(policy, status, reason); why != "" {
			return &ReplayRefusedError{id, why}
		}
		var prev ReplayRequest
		err = tx.QueryRow(ctx, `SELECT id, state, coalesce(result, '') FROM replay_request WHERE message_id = $1 AND state <> 'REFUSED'`, id).
			Scan(&prev.ID, &prev.State, &prev.Result)
		switch {
		case err == nil && prev.State == ReplayPending:
			return &ReplayRefusedError{id, fmt.Sprintf("replay request %d for it is still pending", prev.ID)}
		case err == nil:
			return &ReplayRefusedError{id, fmt.Sprintf("it was replayed already (request %d, result %s)", prev.ID, prev.Result)}
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read replay requests of message %d: %w", id, err)
		}
		var truncated bool
		err = tx.QueryRow(ctx, `SELECT truncated FROM msg_archive WHERE message_id = $1`, id).Scan(&truncated)
		if errors.Is(err, pgx.ErrNoRows) {
			return &ReplayRefusedError{id, "its raw text is not archived (archive retention pruned it, or it was never read)"}
		}
		if err != nil {
			return fmt.Errorf("read archive of message %d: %w", id, err)
		}
		if truncated {
			return &ReplayRefusedError{id, "only the first bytes of its raw text are archived (it was over mailbox.maxMessageBytes)"}
		}
		return tx.QueryRow(ctx, `INSERT INTO replay_request (message_id, policy) VALUES ($1, $2) RETURNING id, message_id, policy, requested_at, state`,
			id, policy).Scan(&req.ID, &req.MessageID, &req.Policy, &req.RequestedAt, &req.State)
	})
	if isUniqueViolation(err) {
		return ReplayRequest{}, &ReplayRefusedError{id, "another replay request for it was recorded at the same time"}
	}
	return req, err
}

const replayColumns = `id, message_id, policy, requested_at, state, finished_at, coalesce(result, ''), coalesce(reason, ''), coalesce(note, '')`

func scanReplay(r pgx.CollectableRow) (ReplayRequest, error) {
	var q ReplayRequest
	err := r.Scan(&q.ID, &q.MessageID, &q.Policy, &q.RequestedAt, &q.State, &q.FinishedAt, &q.Result, &q.Reason, &q.Note)
	return q, err
}

// Replay reads one replay request.
func (s *Store) Replay(ctx context.Context, id int64) (ReplayRequest, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+replayColumns+` FROM replay_request WHERE id = $1`, id)
	if err != nil {
		return ReplayRequest{}, fmt.Errorf("read replay request %d: %w", id, err)
	}
	q, err := pgx.CollectExactlyOneRow(rows, scanReplay)
	if err != nil {
		return ReplayRequest{}, fmt.Errorf("read replay request %d: %w", id, err)
	}
	return q, nil
}

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
