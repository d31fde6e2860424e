package store

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/engine"
)

// A flight's history (flight_change): every event the engine decides is
// one new state of one flight, and the same transaction that writes the
// event writes its history row — what the message changed (the engine's
// diff, already JSON) or how the flight went — stamped with the
// transaction's time. The rows go set-based beside the events: one
// statement for a batch, COPY for a large snapshot's.

// queueChanges inserts the history rows of events with one statement.
func queueChanges(b *pgx.Batch, events []engine.Event, now time.Time) {
	if len(events) == 0 {
		return
	}
	n := len(events)
	flids, versions, msgs := make([]int64, n), make([]int64, n), make([]int64, n)
	received := make([]*time.Time, n)
	days, kinds, changes := make([]*string, n), make([]string, n), make([]string, n)
	for i := range events {
		e := &events[i]
		flids[i], versions[i], msgs[i] = int64(e.FLID), e.Version, e.MessageID //nolint:gosec // at most 12 digits
		received[i], days[i], kinds[i], changes[i] = nullTime(e.ReceivedAt), dayPtr(e.Day), e.ChangeKind, changesOf(e)
	}
	b.Queue(`INSERT INTO flight_change (flid, state_version, message_id, received_at, operation_day, kind, changes, committed_at)
		SELECT flid, state_version, message_id, received_at, operation_day::date, kind, changes::json, $8
		FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::timestamptz[], $5::text[], $6::text[], $7::text[])
		AS u(flid, state_version, message_id, received_at, operation_day, kind, changes)`,
		flids, versions, msgs, received, days, kinds, changes, now)
}

// changesOf is an event's changes, "[]" when the engine gave none.
func changesOf(e *engine.Event) string {
	if e.Changes == "" {
		return "[]"
	}
	return e.Changes
}
