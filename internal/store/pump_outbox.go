package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/flightfeed/flightfeed/internal/engine"
)

// Meta identifies the message whose effects a transaction writes. It is
// the engine's: an alias, so that callers outside the pump (the operator,
// the CLI, tests and benchmarks) keep naming it here.
type Meta = engine.Meta

// Outbox record kinds and events: a msg_event row is one effect of a
// message on a flight (engine.Event) and carries up to two records, its
// change notice (kind KAFKA_MSG, event NOTICE, column notice) and its full
// state or tombstone (kind KAFKA_SCHD, event UPSERT or DELETE, columns
// state and event). The engine decides them; these name them on the
// dispatcher's side of the table (OutboxEvent).
const (
	KindState  = engine.KindState
	KindNotice = engine.KindNotice

	EventUpsert = engine.EventUpsert
	EventDelete = engine.EventDelete
	EventNotice = engine.EventNotice
)

func dayPtr(day string) *string {
	if day == "" {
		return nil
	}
	return &day
}

// queueEvents inserts all events with one statement, one row each, as the
// engine rendered them.
func queueEvents(b *pgx.Batch, events []engine.Event) {
	if len(events) == 0 {
		return
	}
	n := len(events)
	evs, states, notices := make([]*string, n), make([]*string, n), make([]*string, n)
	flids, versions, msgs := make([]int64, n), make([]int64, n), make([]int64, n)
	days := make([]*string, n)
	received := make([]*time.Time, n)
	for i := range events {
		e := &events[i]
		flids[i], versions[i], days[i], msgs[i] = int64(e.FLID), e.Version, dayPtr(e.Day), e.MessageID //nolint:gosec // at most 12 digits
		evs[i], states[i], notices[i] = nonEmpty(e.Event), nonEmpty(e.State), nonEmpty(e.Notice)
		received[i] = receivedPtr(e.ReceivedAt)
	}
	b.Queue(`INSERT INTO msg_event (flid, state_version, operation_day, message_id, notice, event, state, received_at)
		SELECT flid, state_version, operation_day::date, message_id, notice, event, state, received_at
		FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])
		AS u(flid, state_version, operation_day, message_id, notice, event, state, received_at)`,
		flids, versions, days, msgs, notices, evs, states, received)
}

// receivedPtr is a message's received time as a nullable column: NULL
// when zero (the row then reports its processing row's, as rows written
// before the column did).
func receivedPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// copyEventsMin is the number of events (rows) from which they are sent
// with COPY: a snapshot's thousands of full-state documents stream to the
// server row by row instead of travelling as one array parameter that the
// server materialises before inserting. A thousand flights, as when each
// was two rows of 2,000.
const copyEventsMin = 1000

// copyEvents inserts events with COPY, in order (one round trip).
func (t *Tx) copyEvents(ctx context.Context, events []engine.Event) error {
	src := &eventCopySource{events: events, i: -1}
	n, err := t.tx.CopyFrom(ctx, pgx.Identifier{"msg_event"},
		[]string{"flid", "state_version", "operation_day", "message_id", "notice", "event", "state", "received_at"}, src)
	if err != nil {
		return fmt.Errorf("copy events: %w", err)
	}
	if n != int64(len(events)) {
		return fmt.Errorf("copy events: %d of %d rows written", n, len(events))
	}
	return nil
}

// eventDay is e's operation day as a date column (NULL while it has none);
// what names the row in the error ("event", "change").
func eventDay(e *engine.Event, what string) (pgtype.Date, error) {
	if e.Day == "" {
		return pgtype.Date{}, nil
	}
	d, err := time.Parse(time.DateOnly, e.Day)
	if err != nil {
		return pgtype.Date{}, fmt.Errorf("%s of flight %d: operation day %q: %w", what, e.FLID, e.Day, err)
	}
	return pgtype.Date{Time: d, Valid: true}, nil
}

type eventCopySource struct {
	events []engine.Event
	i      int
	row    [8]any
}

func (s *eventCopySource) Next() bool { s.i++; return s.i < len(s.events) }

func (s *eventCopySource) Values() ([]any, error) {
	e := &s.events[s.i]
	day, err := eventDay(e, "event")
	if err != nil {
		return nil, err
	}
	s.row = [8]any{int64(e.FLID), e.Version, day, e.MessageID, nonEmpty(e.Notice), nonEmpty(e.Event), nonEmpty(e.State), //nolint:gosec // at most 12 digits
		receivedPtr(e.ReceivedAt)}
	return s.row[:], nil
}

func (s *eventCopySource) Err() error { return nil }
