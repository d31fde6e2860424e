package store

import (
	"context"
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
	rows, err := s.pool.Query(ctx, `SELECT message_id, received_at, coalesce(msg_type, ''), coalesce(msg_styp, ''), status,
			coalesce(reason, ''), coalesce(note, ''), attempts, updated_at
		FROM proc_state
		WHERE status IN ('DEAD', 'FAILED') AND received_at >= $1 AND ($2 = '' OR reason = $2)
		ORDER BY received_at DESC, message_id DESC LIMIT $3`, f.Since, f.Reason, limit)
	if err != nil {
		return nil, fmt.Errorf("list dead messages: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadMessage, error) {
		var d DeadMessage
		err := r.Scan(&d.MessageID, &d.ReceivedAt, &d.Type, &d.Styp, &d.Status, &d.Reason, &d.Note, &d.Attempts, &d.UpdatedAt)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("list dead messages: %w", err)
	}
	return out, nil
}
