package mailbox

import (
	"context"
	"fmt"
	"time"
)

// The AODB side of the mailbox, for `flightfeed simulate`, the demo and
// tests: FlightFeed never writes inbound rows or marks requests sent in
// production.

// Put inserts an inbound row as the AODB would (status VALID).
func (m *Mailbox) Put(ctx context.Context, body string, received time.Time) (int64, error) {
	res, err := m.db.ExecContext(ctx, m.q.put, received.UTC(), m.validStatus, body)
	if err != nil {
		return 0, fmt.Errorf("insert inbound row: %w", m.bound.explain(err))
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("insert inbound row: %w", m.bound.explain(err))
	}
	return id, nil
}

// Outbound is a request row not yet taken by the AODB.
type Outbound struct {
	ID   int64
	Body string
}

// TakeOutbound returns the unsent outbound rows and marks them sent, as the
// AODB's side does when it picks requests up.
func (m *Mailbox) TakeOutbound(ctx context.Context, now time.Time) ([]Outbound, error) {
	rows, err := m.db.QueryContext(ctx, m.q.unsent)
	if err != nil {
		return nil, fmt.Errorf("read outbound requests: %w", m.bound.explain(err))
	}
	defer func() { _ = rows.Close() }()
	var out []Outbound
	for rows.Next() {
		var o Outbound
		if err := rows.Scan(&o.ID, &o.Body); err != nil {
			return nil, fmt.Errorf("read outbound requests: %w", m.bound.explain(err))
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbound requests: %w", m.bound.explain(err))
	}
	for _, o := range out {
		if _, err := m.db.ExecContext(ctx, m.q.markSent, now.UTC(), o.ID); err != nil {
			return nil, fmt.Errorf("mark request %d sent: %w", o.ID, m.bound.explain(err))
		}
	}
	return out, nil
}
