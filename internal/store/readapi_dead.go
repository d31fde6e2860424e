package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// DeadMessage is one DEAD or FAILED message as proc_state records it.
type DeadMessage struct {
	MessageID  int64     `json:"id"`
	ReceivedAt time.Time `json:"received_at"`
	Type       string    `json:"type,omitempty"`
	Styp       string    `json:"styp,omitempty"`
	Status     string    `json:"status"`
	Reason     string    `json:"reason,omitempty"`
	Note       string    `json:"note,omitempty"`
	Attempts   int       `json:"attempts"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Conflicts are, for a snapshot refused for
	// SAME_FLID_ACROSS_OPERATION_DAYS, the FLIDs it gave another day than
	// their stored one (from the message's latest trace row that names
	// any; absent once the trace log's retention removed it).
	Conflicts []DayConflict `json:"conflicts,omitempty"`
	// Replay is the outcome of the replay that ran on it (absent when none
	// did). proc_state keeps the original DEAD: the replay is an operator's
	// act on it, recorded in replay_request (processing rules R10.8).
	Replay *ReplayOutcome `json:"replay,omitempty"`
}

// ReplayOutcome is a finished (DONE) replay of a dead message: its request,
// its own result and reason, and when it ran.
type ReplayOutcome struct {
	RequestID  int64     `json:"request_id"`
	Policy     string    `json:"policy"`
	Result     string    `json:"result"`
	Reason     string    `json:"reason,omitempty"`
	FinishedAt time.Time `json:"finished_at"`
}

// Applied says the replay took the message in: SUCCEEDED or SKIPPED. A
// replay that ended DEAD or FAILED leaves the message as dead as it was.
func (o *ReplayOutcome) Applied() bool {
	return o != nil && (o.Result == StatusSucceeded || o.Result == StatusSkipped)
}

// DeadFilter narrows DeadMessages: received at or after Since (zero: any),
// with reason Reason ("" any), at most Limit (0: no limit). A message a
// replay applied (ReplayOutcome.Applied) is listed only with Replayed.
type DeadFilter struct {
	Since    time.Time
	Reason   string
	Limit    int
	Replayed bool
}

// DeadMessages lists DEAD and FAILED messages, newest received first,
// each with the replay that ran on it.
func (s *Store) DeadMessages(ctx context.Context, f DeadFilter) ([]DeadMessage, error) {
	limit := any(nil)
	if f.Limit > 0 {
		limit = f.Limit
	}
	// The conflicts come from the trace log (by its msg_id index), only for
	// the messages listed: the limit applies to proc_state first.
	// A replay is looked up by replay_request's one-live-request-per-message
	// index; an applied one drops the message before the limit unless asked.
	rows, err := s.pool.Query(ctx, `SELECT p.message_id, p.received_at, p.msg_type, p.msg_styp, p.status,
			p.reason, p.note, p.attempts, p.updated_at, l.conflicts,
			p.replay_id, p.replay_policy, p.replay_result, p.replay_reason, p.replay_at
		FROM (SELECT s.message_id, s.received_at, coalesce(s.msg_type, '') AS msg_type, coalesce(s.msg_styp, '') AS msg_styp, s.status,
				coalesce(s.reason, '') AS reason, coalesce(s.note, '') AS note, s.attempts, s.updated_at,
				r.id AS replay_id, coalesce(r.policy, '') AS replay_policy, coalesce(r.result, '') AS replay_result,
				coalesce(r.reason, '') AS replay_reason, r.finished_at AS replay_at
			FROM proc_state s
			LEFT JOIN replay_request r ON r.message_id = s.message_id AND r.state = 'DONE'
			WHERE s.status IN ('DEAD', 'FAILED') AND s.received_at >= $1 AND ($2 = '' OR s.reason = $2)
				AND ($4 OR r.id IS NULL OR r.result NOT IN ('SUCCEEDED', 'SKIPPED'))
			ORDER BY s.received_at DESC, s.message_id DESC LIMIT $3) p
		LEFT JOIN LATERAL (SELECT conflicts FROM schd_snap_log
			WHERE msg_id = p.message_id AND conflicts IS NOT NULL ORDER BY id DESC LIMIT 1) l ON true
		ORDER BY p.received_at DESC, p.message_id DESC`, f.Since, f.Reason, limit, f.Replayed)
	if err != nil {
		return nil, fmt.Errorf("list dead messages: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadMessage, error) {
		var d DeadMessage
		var conflicts []byte
		var replayID *int64
		var replayAt *time.Time
		var o ReplayOutcome
		if err := r.Scan(&d.MessageID, &d.ReceivedAt, &d.Type, &d.Styp, &d.Status, &d.Reason, &d.Note, &d.Attempts, &d.UpdatedAt, &conflicts,
			&replayID, &o.Policy, &o.Result, &o.Reason, &replayAt); err != nil {
			return d, err
		}
		if replayID != nil {
			o.RequestID = *replayID
			if replayAt != nil {
				o.FinishedAt = *replayAt
			}
			d.Replay = &o
		}
		if conflicts != nil {
			if err := json.Unmarshal(conflicts, &d.Conflicts); err != nil {
				return d, fmt.Errorf("message %d: trace log conflicts: %w", d.MessageID, err)
			}
		}
		return d, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list dead messages: %w", err)
	}
	return out, nil
}
