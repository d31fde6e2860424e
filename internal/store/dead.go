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
}

// DeadFilter narrows DeadMessages: received at or after Since (zero: any),
// with reason Reason ("" any), at most Limit (0: no limit).
type DeadFilter struct {
	Since  time.Time
	Reason string
	Limit  int
}

// DeadMessages lists DEAD and FAILED messages, newest received first.
func (s *Store) DeadMessages(ctx context.Context, f DeadFilter) ([]DeadMessage, error) {
	limit := any(nil)
	if f.Limit > 0 {
		limit = f.Limit
	}
	// The conflicts come from the trace log (by its msg_id index), only for
	// the messages listed: the limit applies to proc_state first.
	rows, err := s.pool.Query(ctx, `SELECT p.message_id, p.received_at, p.msg_type, p.msg_styp, p.status,
			p.reason, p.note, p.attempts, p.updated_at, l.conflicts
		FROM (SELECT message_id, received_at, coalesce(msg_type, '') AS msg_type, coalesce(msg_styp, '') AS msg_styp, status,
				coalesce(reason, '') AS reason, coalesce(note, '') AS note, attempts, updated_at
			FROM proc_state
			WHERE status IN ('DEAD', 'FAILED') AND received_at >= $1 AND ($2 = '' OR reason = $2)
			ORDER BY received_at DESC, message_id DESC LIMIT $3) p
		LEFT JOIN LATERAL (SELECT conflicts FROM schd_snap_log
			WHERE msg_id = p.message_id AND conflicts IS NOT NULL ORDER BY id DESC LIMIT 1) l ON true
		ORDER BY p.received_at DESC, p.message_id DESC`, f.Since, f.Reason, limit)
	if err != nil {
		return nil, fmt.Errorf("list dead messages: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadMessage, error) {
		var d DeadMessage
		var conflicts []byte
		if err := r.Scan(&d.MessageID, &d.ReceivedAt, &d.Type, &d.Styp, &d.Status, &d.Reason, &d.Note, &d.Attempts, &d.UpdatedAt, &conflicts); err != nil {
			return d, err
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
