package store

import (
	"time"

	"github.com/jackc/pgx/v5"

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
