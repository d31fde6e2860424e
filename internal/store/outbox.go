package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Meta identifies the message whose effects a transaction writes.
type Meta struct {
	// MessageID is the mailbox row id (CMINMSGS_ID).
	MessageID int64
	// ReceivedAt is the mailbox row's received time (with MessageID, the
	// message's identity: ids can restart).
	ReceivedAt time.Time
	Type       string
	Styp       string
}

// Outbox event kinds and events (msg_event.kind / msg_event.event).
const (
	KindState  = "KAFKA_SCHD"
	KindNotice = "KAFKA_MSG"

	EventUpsert = "UPSERT"
	EventDelete = "DELETE"
	EventNotice = "NOTICE"
)

type outboxEvent struct {
	kind, event string
	flid        int64
	version     int64
	day         *string
	messageID   int64
	payload     string
}

// appendNotice renders the KAFKA_MSG document (SPEC §3.3), keys sorted:
// {"CHANGED":[…],"FLID":"…","MSG_ID":N,"STATE_VERSION":N,"STYP":"…","TYPE":"…"}.
// CHANGED holds field tags (upper-case ASCII); the strings are quoted with
// encoding/json so any META value stays valid JSON.
func appendNotice(buf []byte, changed []string, flid flight.FLID, meta Meta, version int64) []byte {
	quote := func(b []byte, s string) []byte {
		q, _ := json.Marshal(s) // a string always marshals
		return append(b, q...)
	}
	buf = append(buf, `{"CHANGED":[`...)
	for i, c := range changed {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = quote(buf, c)
	}
	buf = append(buf, `],"FLID":"`...)
	buf = strconv.AppendUint(buf, uint64(flid), 10)
	buf = append(buf, `","MSG_ID":`...)
	buf = strconv.AppendInt(buf, meta.MessageID, 10)
	buf = append(buf, `,"STATE_VERSION":`...)
	buf = strconv.AppendInt(buf, version, 10)
	buf = append(buf, `,"STYP":`...)
	buf = quote(buf, meta.Styp)
	buf = append(buf, `,"TYPE":`...)
	buf = quote(buf, meta.Type)
	return append(buf, '}')
}

// upsertEvents are the two events of a changed flight, computed from the one
// next state that is also written (SPEC §2.1).
func upsertEvents(next *flight.State, changed []string, meta Meta) ([]outboxEvent, error) {
	doc, err := flight.CanonicalJSON(*next)
	if err != nil {
		return nil, fmt.Errorf("state of flight %s: %w", next.FLID, err)
	}
	n := appendNotice(nil, changed, next.FLID, meta, next.StateVersion)
	flid := int64(next.FLID) //nolint:gosec // at most 12 digits
	day := dayPtr(next.OperationDay)
	return []outboxEvent{
		{kind: KindState, event: EventUpsert, flid: flid, version: next.StateVersion, day: day, messageID: meta.MessageID, payload: string(doc)},
		{kind: KindNotice, event: EventNotice, flid: flid, version: next.StateVersion, day: day, messageID: meta.MessageID, payload: string(n)},
	}, nil
}

// deleteEvents are the tombstone (seed 000 §7.3) and its notice, whose
// CHANGED is ["DELETED"].
func deleteEvents(flid flight.FLID, version int64, day string, meta Meta) ([]outboxEvent, error) {
	tomb, err := flight.TombstoneJSON(flid, version)
	if err != nil {
		return nil, fmt.Errorf("tombstone of flight %s: %w", flid, err)
	}
	n := appendNotice(nil, []string{flight.KeyDeleted}, flid, meta, version)
	id := int64(flid) //nolint:gosec // at most 12 digits
	return []outboxEvent{
		{kind: KindState, event: EventDelete, flid: id, version: version, day: dayPtr(day), messageID: meta.MessageID, payload: string(tomb)},
		{kind: KindNotice, event: EventNotice, flid: id, version: version, day: dayPtr(day), messageID: meta.MessageID, payload: string(n)},
	}, nil
}

func dayPtr(day string) *string {
	if day == "" {
		return nil
	}
	return &day
}

// queueEvents inserts all events with one statement.
func queueEvents(b *pgx.Batch, events []outboxEvent) {
	if len(events) == 0 {
		return
	}
	n := len(events)
	kinds, evs, payloads := make([]string, n), make([]string, n), make([]string, n)
	flids, versions, msgs := make([]int64, n), make([]int64, n), make([]int64, n)
	days := make([]*string, n)
	for i, e := range events {
		kinds[i], evs[i], flids[i], versions[i], days[i], msgs[i], payloads[i] =
			e.kind, e.event, e.flid, e.version, e.day, e.messageID, e.payload
	}
	b.Queue(`INSERT INTO msg_event (kind, event, flid, state_version, operation_day, message_id, payload)
		SELECT kind, event, flid, state_version, operation_day::date, message_id, payload
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[], $7::text[])
		AS u(kind, event, flid, state_version, operation_day, message_id, payload)`,
		kinds, evs, flids, versions, days, msgs, payloads)
}

// copyEventsMin is the number of events from which they are sent with
// COPY: a snapshot's thousands of full-state documents stream to the
// server row by row instead of travelling as one array parameter that the
// server materialises before inserting.
const copyEventsMin = 2000

// copyEvents inserts events with COPY, in order (one round trip).
func (t *Tx) copyEvents(ctx context.Context, events []outboxEvent) error {
	src := &eventCopySource{events: events, i: -1}
	n, err := t.tx.CopyFrom(ctx, pgx.Identifier{"msg_event"},
		[]string{"kind", "event", "flid", "state_version", "operation_day", "message_id", "payload"}, src)
	if err != nil {
		return fmt.Errorf("copy events: %w", err)
	}
	if n != int64(len(events)) {
		return fmt.Errorf("copy events: %d of %d rows written", n, len(events))
	}
	return nil
}

type eventCopySource struct {
	events []outboxEvent
	i      int
	row    [7]any
}

func (s *eventCopySource) Next() bool { s.i++; return s.i < len(s.events) }

func (s *eventCopySource) Values() ([]any, error) {
	e := &s.events[s.i]
	day := pgtype.Date{}
	if e.day != nil {
		d, err := time.Parse(time.DateOnly, *e.day)
		if err != nil {
			return nil, fmt.Errorf("event of flight %d: operation day %q: %w", e.flid, *e.day, err)
		}
		day = pgtype.Date{Time: d, Valid: true}
	}
	s.row = [7]any{e.kind, e.event, e.flid, e.version, day, e.messageID, e.payload}
	return s.row[:], nil
}

func (s *eventCopySource) Err() error { return nil }

// eventsFor renders the events of many changed flights; a large snapshot
// spreads the JSON work over the cores (order is kept).
func eventsFor(writes []stateWrite, meta Meta) ([]outboxEvent, error) {
	out := make([][]outboxEvent, len(writes))
	errs := make([]error, len(writes))
	inParallel(len(writes), func(i int) {
		out[i], errs[i] = upsertEvents(&writes[i].next, writes[i].changed, meta)
	})
	events := make([]outboxEvent, 0, 2*len(writes))
	for i := range writes {
		if errs[i] != nil {
			return nil, errs[i]
		}
		events = append(events, out[i]...)
	}
	return events, nil
}
