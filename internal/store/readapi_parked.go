package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Parked events: the broker refused them for good (record too large,
// invalid record). The dispatcher lists them in msg_event_parked (with
// AdvanceCursor) and moves on: a parked event is no longer retried, holds
// back nothing, and waits for `flightfeed parked --redeliver` or for a newer
// delivered state of its flight, which drops it from the list.

// ParkedEvent is one parked record, without its payload: ID is its
// msg_event row, Kind says which of the row's records (a row can have its
// notice and its state parked, two entries with one ID).
type ParkedEvent struct {
	ID           int64
	Kind, Event  string
	FLID         flight.FLID
	StateVersion int64
	OperationDay string
	MessageID    int64
	// Bytes is the payload's length.
	Bytes     int64
	Attempts  int32
	LastError string
	CreatedAt time.Time
	ParkedAt  time.Time
}

// ParkedEvents lists parked events, oldest first (at most limit; limit <= 0:
// all).
func (s *Store) ParkedEvents(ctx context.Context, limit int) ([]ParkedEvent, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	rows, err := s.pool.Query(ctx, `
		SELECT e.id, p.kind, CASE WHEN p.kind = 'KAFKA_SCHD' THEN e.event ELSE 'NOTICE' END,
			e.flid, e.state_version, coalesce(e.operation_day::text, ''), e.message_id,
			octet_length(CASE WHEN p.kind = 'KAFKA_SCHD' THEN e.state ELSE e.notice END),
			p.attempts, p.last_error, e.created_at, p.parked_at
		FROM msg_event_parked p JOIN msg_event e ON e.id = p.event_id ORDER BY p.event_id, p.kind DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("read parked outbox events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ParkedEvent, error) {
		var e ParkedEvent
		var flid int64
		err := row.Scan(&e.ID, &e.Kind, &e.Event, &flid, &e.StateVersion, &e.OperationDay, &e.MessageID,
			&e.Bytes, &e.Attempts, &e.LastError, &e.CreatedAt, &e.ParkedAt)
		e.FLID = flight.FLID(flid) //nolint:gosec // CHECK (flid BETWEEN 0 AND 999999999999)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read parked outbox events: %w", err)
	}
	return out, nil
}

// ParkedCount counts parked records.
func (s *Store) ParkedCount(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM msg_event_parked`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count parked outbox events: %w", err)
	}
	return n, nil
}

// RedeliverParked sends parked records again, once their cause is fixed
// (the topic accepts larger records, say): those of the rows ids, or every
// parked record when ids is empty. The parked records of a row are
// inserted again as one new outbox row (same flight, version, message and
// payloads, only the parked records; attempts from the parked entries)
// and leave msg_event_parked, in one transaction that holds the
// pipeline_lock row like the pump's, so outbox ids still commit in order
// (the cursor relies on it). The dispatcher sends them with its next pass,
// in id order with the rest; a state event that a newer delivered state of
// its flight superseded meanwhile is no longer parked and stays as it is.
// It returns the parked events' ids that were inserted again.
func (s *Store) RedeliverParked(ctx context.Context, ids []int64) ([]int64, error) {
	if ids == nil {
		ids = []int64{} // NULL would match nothing
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("re-deliver parked outbox events: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM pipeline_lock WHERE name = $1 FOR UPDATE`, LockName); err != nil {
		return nil, fmt.Errorf("re-deliver parked outbox events: lock pipeline: %w", err)
	}
	rows, err := tx.Query(ctx, `
		WITH gone AS (
			DELETE FROM msg_event_parked
			WHERE cardinality($1::bigint[]) = 0 OR event_id = ANY($1)
			RETURNING event_id, kind, attempts, last_error
		), per_row AS (
			SELECT event_id, bool_or(kind = 'KAFKA_SCHD') AS state, bool_or(kind = 'KAFKA_MSG') AS notice,
				max(attempts) AS attempts, (array_agg(last_error ORDER BY kind DESC))[1] AS last_error
			FROM gone GROUP BY event_id
		), copied AS (
			INSERT INTO msg_event (flid, state_version, operation_day, message_id, event, state, notice,
				attempts, last_error, created_at, received_at)
			SELECT e.flid, e.state_version, e.operation_day, e.message_id,
				CASE WHEN g.state THEN e.event END, CASE WHEN g.state THEN e.state END,
				CASE WHEN g.notice THEN e.notice END,
				g.attempts, g.last_error, e.created_at, e.received_at
			FROM per_row g JOIN msg_event e ON e.id = g.event_id
			ORDER BY g.event_id
			RETURNING 1
		)
		SELECT event_id FROM per_row WHERE (SELECT count(*) FROM copied) >= 0 ORDER BY event_id`, ids)
	if err != nil {
		return nil, fmt.Errorf("re-deliver parked outbox events: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("re-deliver parked outbox events: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("re-deliver parked outbox events: commit: %w", err)
	}
	return out, nil
}
