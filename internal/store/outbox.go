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
	"github.com/flightfeed/flightfeed/internal/recsize"
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
	// Door, when set, is the largest Kafka record the topics accept
	// (kafka.maxRecordBytes) and the producer's codec: a message whose new
	// flight state or notice would make a larger record is refused with a
	// *TooLarge error and changes nothing.
	Door *recsize.Measure
}

// TooLarge refuses a message whose effect would publish a record larger
// than the topics accept (the pump's STATE_TOO_LARGE).
type TooLarge struct {
	FLID flight.FLID
	// Kind is KindState or KindNotice.
	Kind string
	// Size is the record as counted (uncompressed, and compressed as the
	// broker counts it); Limit is kafka.maxRecordBytes.
	Size  recsize.Size
	Limit int
	// Field is the state's largest field (the one that grew), FieldBytes
	// its size in the document and Items its elements when it is a list.
	Field      string
	FieldBytes int
	Items      int
}

func (e *TooLarge) Error() string {
	what := "state"
	if e.Kind == KindNotice {
		what = "change notice"
	}
	msg := fmt.Sprintf("flight %s: its %s would be a Kafka record of %d bytes (%d compressed), more than kafka.maxRecordBytes %d",
		e.FLID, what, e.Size.Uncompressed, e.Size.Compressed, e.Limit)
	if e.Field != "" {
		msg += fmt.Sprintf("; largest field %s: %d bytes", e.Field, e.FieldBytes)
		if e.Items > 0 {
			msg += fmt.Sprintf(" in %d items", e.Items)
		}
	}
	return msg
}

// RecordHeaders are the headers package dispatch sends with an outbox
// event's record (SPEC §3.3); the door counts them, and dispatch's tests
// check that both agree.
func RecordHeaders(event string, version int64, day string) []recsize.Header {
	h := []recsize.Header{{Key: "state-version", Value: strconv.FormatInt(version, 10)}, {Key: "event", Value: event}}
	if day != "" {
		h = append(h, recsize.Header{Key: "operation-day", Value: day})
	}
	return h
}

// checkDoor measures the record of one event against the door.
func checkDoor(door *recsize.Measure, e *outboxEvent) error {
	if door == nil {
		return nil
	}
	day := ""
	if e.day != nil {
		day = *e.day
	}
	key := strconv.AppendInt(nil, e.flid, 10)
	size := door.Of(key, []byte(e.payload), RecordHeaders(e.event, e.version, day))
	if door.Fits(size) {
		return nil
	}
	tl := &TooLarge{FLID: flight.FLID(e.flid), Kind: e.kind, Size: size, Limit: door.Max()} //nolint:gosec // 12 digits
	tl.Field, tl.FieldBytes, tl.Items = largestField([]byte(e.payload))
	return tl
}

// largestField names the top-level member of a JSON document with the most
// bytes (and its elements when it is an array or object), "" when the
// document is not an object.
func largestField(doc []byte) (name string, size, items int) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil {
		return "", 0, 0
	}
	for k, v := range fields {
		if len(v) > size || (len(v) == size && k < name) {
			name, size = k, len(v)
		}
	}
	switch v := fields[name]; {
	case len(v) > 0 && v[0] == '[':
		var a []json.RawMessage
		if json.Unmarshal(v, &a) == nil {
			items = len(a)
		}
	case len(v) > 0 && v[0] == '{':
		var o map[string]json.RawMessage
		if json.Unmarshal(v, &o) == nil {
			items = len(o)
		}
	}
	return name, size, items
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
	events := []outboxEvent{
		{kind: KindState, event: EventUpsert, flid: flid, version: next.StateVersion, day: day, messageID: meta.MessageID, payload: string(doc)},
		{kind: KindNotice, event: EventNotice, flid: flid, version: next.StateVersion, day: day, messageID: meta.MessageID, payload: string(n)},
	}
	for i := range events {
		if err := checkDoor(meta.Door, &events[i]); err != nil {
			return nil, err
		}
	}
	return events, nil
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
