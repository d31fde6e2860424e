package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// StatusParked is the msg_event status of an event the broker refused for
// good (record too large, invalid record): it is no longer retried, holds
// back nothing, and waits for `flightfeed parked --redeliver` or for a
// newer state of its flight to supersede it.
const StatusParked = "PARKED"

// MarkParked parks events the broker refused for good: status PARKED, one
// attempt more, the error kept (errs[i] belongs to ids[i]) and done_at the
// time it was parked. Only PENDING rows change. The older PENDING states of
// a parked state's flight become SUPERSEDED in the same statement, as when
// it is delivered: they are obsolete, and sending one would publish an
// older state after the flight moved on. Fenced like MarkDelivered:
// ErrFenced, and nothing changed, once epoch is superseded.
func (s *Store) MarkParked(ctx context.Context, epoch int64, ids []int64, errs []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	if len(errs) != len(ids) {
		return 0, fmt.Errorf("park outbox events: %d ids but %d errors", len(ids), len(errs))
	}
	var current, parked int64
	err := s.pool.QueryRow(ctx, `
		WITH f AS (
			UPDATE msg_event e SET status = 'PARKED', done_at = now(), attempts = e.attempts + 1,
				last_error = left(u.err, 1000)
			FROM unnest($1::bigint[], $2::text[]) AS u(id, err)
			WHERE e.id = u.id AND e.status = 'PENDING'
			  AND EXISTS (SELECT 1 FROM pipeline_lock WHERE name = $3 AND epoch = $4)
			RETURNING e.id, e.kind, e.flid, e.state_version
		), newest AS (
			SELECT flid, max(state_version) AS v FROM f WHERE kind = 'KAFKA_SCHD' GROUP BY flid
		), s AS (
			UPDATE msg_event e SET status = 'SUPERSEDED', done_at = now()
			FROM newest
			WHERE e.status = 'PENDING' AND e.kind = 'KAFKA_SCHD' AND e.flid = newest.flid
			  AND e.state_version < newest.v AND e.id NOT IN (SELECT unnest($1::bigint[]))
			RETURNING e.id
		)
		SELECT (SELECT epoch FROM pipeline_lock WHERE name = $3), (SELECT count(*) FROM f) + 0 * (SELECT count(*) FROM s)`,
		ids, errs, LockName, epoch).Scan(&current, &parked)
	if err != nil {
		return 0, fmt.Errorf("park %d outbox events: %w", len(ids), err)
	}
	if current != epoch {
		return 0, fmt.Errorf("park %d outbox events: %w (mine %d, current %d)", len(ids), ErrFenced, epoch, current)
	}
	return parked, nil
}

// ParkedEvent is one PARKED msg_event row, without its payload.
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
		SELECT id, kind, event, flid, state_version, coalesce(operation_day::text, ''), message_id,
			octet_length(payload), attempts, coalesce(last_error, ''), created_at, done_at
		FROM msg_event WHERE status = 'PARKED' ORDER BY id LIMIT $1`, limit)
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

// ParkedCount counts parked events.
func (s *Store) ParkedCount(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM msg_event WHERE status = 'PARKED'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count parked outbox events: %w", err)
	}
	return n, nil
}

// RedeliverParked makes parked events PENDING again, once their cause is
// fixed (the topic accepts larger records, say): ids, or every parked event
// when ids is empty. The dispatcher sends them with its next pass, in id
// order with the rest; a state event that a newer delivered state of its
// flight superseded meanwhile is no longer PARKED and stays as it is. It
// returns the events made PENDING.
func (s *Store) RedeliverParked(ctx context.Context, ids []int64) ([]int64, error) {
	if ids == nil {
		ids = []int64{} // NULL would match nothing
	}
	rows, err := s.pool.Query(ctx, `
		UPDATE msg_event SET status = 'PENDING', done_at = NULL
		WHERE status = 'PARKED' AND (cardinality($1::bigint[]) = 0 OR id = ANY($1))
		RETURNING id`, ids)
	if err != nil {
		return nil, fmt.Errorf("re-deliver parked outbox events: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("re-deliver parked outbox events: %w", err)
	}
	return out, nil
}

// OutboxFigures counts PENDING events (superseded-to-be rows included) and
// PARKED ones, and returns the creation time of the oldest PENDING one
// (zero when none is pending), in one statement.
func (s *Store) OutboxFigures(ctx context.Context) (pending, parked int64, oldest time.Time, err error) {
	var first *time.Time
	err = s.pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM msg_event WHERE status = 'PENDING'),
			(SELECT count(*) FROM msg_event WHERE status = 'PARKED'),
			(SELECT min(created_at) FROM msg_event WHERE status = 'PENDING')`).Scan(&pending, &parked, &first)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("count pending outbox events: %w", err)
	}
	if first != nil {
		oldest = *first
	}
	return pending, parked, oldest, nil
}
