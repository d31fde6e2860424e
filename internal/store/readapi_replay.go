package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Replay requests as the ops API and `flightfeed replay` record and read
// them; the pump runs them (pump_replay.go).

// Replay policies (processing rules R10.8): as-new runs the archived raw text through
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

// Replay reads one replay request (ErrNotFound when there is none with
// that id).
func (s *Store) Replay(ctx context.Context, id int64) (ReplayRequest, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+replayColumns+` FROM replay_request WHERE id = $1`, id)
	if err != nil {
		return ReplayRequest{}, fmt.Errorf("read replay request %d: %w", id, err)
	}
	q, err := pgx.CollectExactlyOneRow(rows, scanReplay)
	if errors.Is(err, pgx.ErrNoRows) {
		return ReplayRequest{}, fmt.Errorf("read replay request %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return ReplayRequest{}, fmt.Errorf("read replay request %d: %w", id, err)
	}
	return q, nil
}
