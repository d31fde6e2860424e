package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// The dispatcher's side of the outbox (msg_event). These statements run
// outside the pump's write transactions: they read pending rows and move
// rows from PENDING to DELIVERED or SUPERSEDED, and they never touch state
// tables. Each is one statement (one round trip), whatever the number of
// rows; the ones that change rows check the caller's fencing epoch in that
// same statement (they take no lock on pipeline_lock, so they never wait
// for a pump's transaction).

// OutboxEvent is one undelivered msg_event row.
type OutboxEvent struct {
	ID int64
	// Kind is KindState (KAFKA_SCHD) or KindNotice (KAFKA_MSG); Event is
	// EventUpsert, EventDelete or EventNotice.
	Kind, Event  string
	FLID         flight.FLID
	StateVersion int64
	// OperationDay is "YYYY-MM-DD", or "" while the flight's day is NULL.
	OperationDay string
	// MessageID is the mailbox row whose transaction queued the event.
	MessageID int64
	// Payload is the exact value to publish, as committed.
	Payload   []byte
	Attempts  int32
	CreatedAt time.Time
}

// PendingEvents returns the next PENDING events to publish, coalesced, in
// id (commit) order: it takes the oldest limit PENDING rows (the window),
// keeps their KAFKA_MSG notices as they are, and replaces the KAFKA_SCHD
// rows of each FLID in the window by that FLID's newest PENDING KAFKA_SCHD
// row (which may lie beyond the window), so each FLID's full state appears
// at most once, at its newest version (seed 000 §7.3). The older rows stay
// PENDING until MarkDelivered supersedes them. At most limit events are
// returned, and none only when nothing is PENDING.
//
// The window is read from the msg_event_pending index in id order and the
// newest rows from msg_event_pending_state, so a pass costs the same however
// long the backlog is.
func (s *Store) PendingEvents(ctx context.Context, limit int) ([]OutboxEvent, error) {
	events, _, err := s.PendingWindow(ctx, limit)
	return events, err
}

// PendingWindow is PendingEvents that also reports whether the window was
// full (limit PENDING rows): only then can more rows be PENDING than the
// read took, so a dispatcher that was not notified of a new commit since
// need not read again at once.
func (s *Store) PendingWindow(ctx context.Context, limit int) (events []OutboxEvent, full bool, err error) {
	rows, err := s.pool.Query(ctx, `
		WITH w AS MATERIALIZED (
			SELECT id, kind, flid FROM msg_event WHERE status = 'PENDING' ORDER BY id LIMIT $1
		), newest AS (
			SELECT x.id FROM (SELECT DISTINCT flid FROM w WHERE kind = 'KAFKA_SCHD') f
			CROSS JOIN LATERAL (
				SELECT n.id FROM msg_event n
				WHERE n.status = 'PENDING' AND n.kind = 'KAFKA_SCHD' AND n.flid = f.flid
				ORDER BY n.state_version DESC LIMIT 1) x
		)
		SELECT e.id, e.kind, e.event, e.flid, e.state_version, coalesce(e.operation_day::text, ''),
			e.message_id, e.payload, e.attempts, e.created_at, (SELECT count(*) FROM w)
		FROM msg_event e
		WHERE e.id IN (SELECT id FROM w WHERE kind <> 'KAFKA_SCHD' UNION ALL SELECT id FROM newest)
		ORDER BY e.id`, limit)
	if err != nil {
		return nil, false, fmt.Errorf("read pending outbox events: %w", err)
	}
	var window int64
	events, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutboxEvent, error) {
		var e OutboxEvent
		var flid int64
		var payload string
		err := row.Scan(&e.ID, &e.Kind, &e.Event, &flid, &e.StateVersion, &e.OperationDay,
			&e.MessageID, &payload, &e.Attempts, &e.CreatedAt, &window)
		e.FLID = flight.FLID(flid) //nolint:gosec // CHECK (flid BETWEEN 0 AND 999999999999)
		e.Payload = []byte(payload)
		return e, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("read pending outbox events: %w", err)
	}
	return events, window >= int64(limit), nil
}

// MarkDelivered records that the broker acknowledged (and, with
// transactions, committed) the records of the events ids: they become
// DELIVERED, and in the same statement every PENDING KAFKA_SCHD row of the
// same FLID with a lower state_version becomes SUPERSEDED — the
// acknowledged record carries a newer full state (or the tombstone), so
// the older ones must never be sent. A PARKED older state of the FLID is
// superseded too: it is obsolete once a newer one is on the topic. Rows that are no longer PENDING are
// left alone, so a repeated call changes nothing.
//
// The statement is fenced like the pump's transactions: it changes rows
// only while epoch is the current one in pipeline_lock, read in the same
// statement, and returns ErrFenced otherwise, so a deposed dispatcher can
// neither mark nor supersede anything.
func (s *Store) MarkDelivered(ctx context.Context, epoch int64, ids []int64) (delivered, superseded int64, err error) {
	if len(ids) == 0 {
		return 0, 0, nil
	}
	// The outer UPDATE sees the rows as they were before the CTE's update
	// (one snapshot), so it must not select the delivered rows themselves:
	// "NOT IN d" keeps the two sets disjoint. It needs no fence of its
	// own: it only follows rows that d changed.
	//
	// The statement's cost is linear in the pass whatever the statistics
	// say (a table that grew from empty in minutes has none worth the
	// name): the older events of each FLID are one range of the pending
	// index (OFFSET 0 keeps the lateral subquery a per-FLID index probe
	// instead of a join the planner may turn into FLIDs × pending rows —
	// 1.5 s a 1,000-event pass after a 9,999-flight RESP), and the rows
	// are updated by primary key.
	var current int64
	err = s.pool.QueryRow(ctx, `
		WITH d AS (
			UPDATE msg_event SET status = 'DELIVERED', done_at = now()
			WHERE id = ANY($1) AND status = 'PENDING'
			  AND EXISTS (SELECT 1 FROM pipeline_lock WHERE name = $2 AND epoch = $3)
			RETURNING id, kind, flid, state_version
		), newest AS (
			SELECT flid, max(state_version) AS v FROM d WHERE kind = 'KAFKA_SCHD' GROUP BY flid
		), older AS (
			SELECT o.id FROM newest CROSS JOIN LATERAL (
				SELECT p.id FROM msg_event p
				WHERE p.status = 'PENDING' AND p.kind = 'KAFKA_SCHD' AND p.flid = newest.flid
				  AND p.state_version < newest.v
				OFFSET 0) o
		), s AS (
			UPDATE msg_event e SET status = 'SUPERSEDED', done_at = now()
			WHERE e.id = ANY(ARRAY(SELECT id FROM older)) AND e.status = 'PENDING'
			  AND e.id NOT IN (SELECT id FROM d)
			RETURNING e.id
		), p AS (
			UPDATE msg_event e SET status = 'SUPERSEDED', done_at = now()
			FROM newest
			WHERE e.status = 'PARKED' AND e.kind = 'KAFKA_SCHD' AND e.flid = newest.flid
			  AND e.state_version < newest.v
			RETURNING e.id
		)
		SELECT (SELECT epoch FROM pipeline_lock WHERE name = $2), (SELECT count(*) FROM d),
			(SELECT count(*) FROM s) + (SELECT count(*) FROM p)`,
		ids, LockName, epoch).Scan(&current, &delivered, &superseded)
	if err != nil {
		return 0, 0, fmt.Errorf("mark %d outbox events delivered: %w", len(ids), err)
	}
	if current != epoch {
		return 0, 0, fmt.Errorf("mark %d outbox events delivered: %w (mine %d, current %d)", len(ids), ErrFenced, epoch, current)
	}
	return delivered, superseded, nil
}

// MarkFailed counts one more failed attempt for each event and keeps its
// error (errs[i] belongs to ids[i]). The rows stay PENDING: a failed event
// is retried until delivered, never expired (seed 000 §7.3). Fenced like
// MarkDelivered: ErrFenced, and nothing changed, once epoch is superseded.
func (s *Store) MarkFailed(ctx context.Context, epoch int64, ids []int64, errs []string) error {
	if len(ids) == 0 {
		return nil
	}
	if len(errs) != len(ids) {
		return fmt.Errorf("mark outbox events failed: %d ids but %d errors", len(ids), len(errs))
	}
	var current int64
	err := s.pool.QueryRow(ctx, `
		WITH f AS (
			UPDATE msg_event e SET attempts = e.attempts + 1, last_error = left(u.err, 1000)
			FROM unnest($1::bigint[], $2::text[]) AS u(id, err)
			WHERE e.id = u.id AND e.status = 'PENDING'
			  AND EXISTS (SELECT 1 FROM pipeline_lock WHERE name = $3 AND epoch = $4)
			RETURNING e.id
		)
		SELECT (SELECT epoch FROM pipeline_lock WHERE name = $3), (SELECT count(*) FROM f)`,
		ids, errs, LockName, epoch).Scan(&current, new(int64))
	if err != nil {
		return fmt.Errorf("mark %d outbox events failed: %w", len(ids), err)
	}
	if current != epoch {
		return fmt.Errorf("mark %d outbox events failed: %w (mine %d, current %d)", len(ids), ErrFenced, epoch, current)
	}
	return nil
}

// OutboxStats counts PENDING events (superseded-to-be rows included) and
// returns the creation time of the oldest (zero when none is pending).
func (s *Store) OutboxStats(ctx context.Context) (pending int64, oldest time.Time, err error) {
	var first *time.Time
	err = s.pool.QueryRow(ctx, `SELECT count(*), min(created_at) FROM msg_event WHERE status = 'PENDING'`).Scan(&pending, &first)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("count pending outbox events: %w", err)
	}
	if first != nil {
		oldest = *first
	}
	return pending, oldest, nil
}
