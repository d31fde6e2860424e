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

// checkDoor measures one record against the door: kind says which of
// the event's records (its state or its notice).
func checkDoor(door *recsize.Measure, e *outboxEvent, kind string) error {
	if door == nil {
		return nil
	}
	day := ""
	if e.day != nil {
		day = *e.day
	}
	event, payload := EventNotice, e.notice
	if kind == KindState {
		event, payload = e.event, e.state
	}
	key := strconv.AppendInt(nil, e.flid, 10)
	size := door.Of(key, []byte(payload), RecordHeaders(event, e.version, day))
	if door.Fits(size) {
		return nil
	}
	tl := &TooLarge{FLID: flight.FLID(e.flid), Kind: kind, Size: size, Limit: door.Max()} //nolint:gosec // 12 digits
	tl.Field, tl.FieldBytes, tl.Items = largestField([]byte(payload))
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

// Outbox record kinds and events. A msg_event row is one effect of a
// message on a flight and carries up to two records: its change notice
// (kind KAFKA_MSG, event NOTICE, column notice) and its full state or
// tombstone (kind KAFKA_SCHD, event UPSERT or DELETE, columns state and
// event), the latter only when the effect is the newest version of its
// flight among the effects written together (newestStateOnly).
const (
	KindState  = "KAFKA_SCHD"
	KindNotice = "KAFKA_MSG"

	EventUpsert = "UPSERT"
	EventDelete = "DELETE"
	EventNotice = "NOTICE"
)

// outboxEvent is one msg_event row: a message's effect on a flight.
type outboxEvent struct {
	flid      int64
	version   int64
	day       *string
	messageID int64
	// notice is the KAFKA_MSG document; event and state the KAFKA_SCHD
	// record's event (UPSERT or DELETE) and document, both "" when the row
	// carries no state.
	notice       string
	event, state string
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

// upsertEvent is the event of a changed flight, computed from the one
// next state that is also written (SPEC §2.1): its notice and its state,
// each measured against the door, whether or not the state is written in
// the end (newestStateOnly): a message is refused or accepted alone,
// whatever the batch it comes in.
func upsertEvent(next *flight.State, changed []string, meta Meta) (outboxEvent, error) {
	doc, err := flight.CanonicalJSON(*next)
	if err != nil {
		return outboxEvent{}, fmt.Errorf("state of flight %s: %w", next.FLID, err)
	}
	n := appendNotice(nil, changed, next.FLID, meta, next.StateVersion)
	e := outboxEvent{flid: int64(next.FLID), version: next.StateVersion, day: dayPtr(next.OperationDay), //nolint:gosec // at most 12 digits
		messageID: meta.MessageID, notice: string(n), event: EventUpsert, state: string(doc)}
	for _, kind := range []string{KindState, KindNotice} {
		if err := checkDoor(meta.Door, &e, kind); err != nil {
			return outboxEvent{}, err
		}
	}
	return e, nil
}

// deleteEvent is the event of a deleted flight: its tombstone (seed 000
// §7.3) and its notice, whose CHANGED is ["DELETED"].
func deleteEvent(flid flight.FLID, version int64, day string, meta Meta) (outboxEvent, error) {
	tomb, err := flight.TombstoneJSON(flid, version)
	if err != nil {
		return outboxEvent{}, fmt.Errorf("tombstone of flight %s: %w", flid, err)
	}
	n := appendNotice(nil, []string{flight.KeyDeleted}, flid, meta, version)
	return outboxEvent{flid: int64(flid), version: version, day: dayPtr(day), messageID: meta.MessageID, //nolint:gosec // at most 12 digits
		notice: string(n), event: EventDelete, state: string(tomb)}, nil
}

// newestStateOnly keeps the state only on the newest version of each
// flight among events written together (one transaction's, in version
// order): the older ones keep their notice alone. The dispatcher sends a
// flight's newest state above its cursor only, and these commit together,
// so no older state of them could ever be sent.
func newestStateOnly(events []outboxEvent) {
	if len(events) < 2 {
		return
	}
	newest := make(map[int64]int, len(events))
	for i := range events {
		if events[i].state == "" {
			continue
		}
		if j, ok := newest[events[i].flid]; ok {
			if events[j].version > events[i].version {
				events[i].event, events[i].state = "", ""
				continue
			}
			events[j].event, events[j].state = "", ""
		}
		newest[events[i].flid] = i
	}
}

func dayPtr(day string) *string {
	if day == "" {
		return nil
	}
	return &day
}

// queueEvents inserts all events with one statement, one row each.
func queueEvents(b *pgx.Batch, events []outboxEvent) {
	if len(events) == 0 {
		return
	}
	newestStateOnly(events)
	n := len(events)
	evs, states, notices := make([]*string, n), make([]*string, n), make([]*string, n)
	flids, versions, msgs := make([]int64, n), make([]int64, n), make([]int64, n)
	days := make([]*string, n)
	for i := range events {
		e := &events[i]
		flids[i], versions[i], days[i], msgs[i] = e.flid, e.version, e.day, e.messageID
		evs[i], states[i], notices[i] = nonEmpty(e.event), nonEmpty(e.state), nonEmpty(e.notice)
	}
	b.Queue(`INSERT INTO msg_event (flid, state_version, operation_day, message_id, notice, event, state)
		SELECT flid, state_version, operation_day::date, message_id, notice, event, state
		FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[])
		AS u(flid, state_version, operation_day, message_id, notice, event, state)`,
		flids, versions, days, msgs, notices, evs, states)
}

// copyEventsMin is the number of events (rows) from which they are sent
// with COPY: a snapshot's thousands of full-state documents stream to the
// server row by row instead of travelling as one array parameter that the
// server materialises before inserting. A thousand flights, as when each
// was two rows of 2,000.
const copyEventsMin = 1000

// copyEvents inserts events with COPY, in order (one round trip).
func (t *Tx) copyEvents(ctx context.Context, events []outboxEvent) error {
	newestStateOnly(events)
	src := &eventCopySource{events: events, i: -1}
	n, err := t.tx.CopyFrom(ctx, pgx.Identifier{"msg_event"},
		[]string{"flid", "state_version", "operation_day", "message_id", "notice", "event", "state"}, src)
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
	s.row = [7]any{e.flid, e.version, day, e.messageID, nonEmpty(e.notice), nonEmpty(e.event), nonEmpty(e.state)}
	return s.row[:], nil
}

func (s *eventCopySource) Err() error { return nil }

// eventsFor renders the events of many changed flights; a large snapshot
// spreads the JSON work over the cores (order is kept).
func eventsFor(writes []stateWrite, meta Meta) ([]outboxEvent, error) {
	events := make([]outboxEvent, len(writes))
	errs := make([]error, len(writes))
	inParallel(len(writes), func(i int) {
		events[i], errs[i] = upsertEvent(&writes[i].next, writes[i].changed, meta)
	})
	for i := range writes {
		if errs[i] != nil {
			return nil, errs[i]
		}
	}
	return events, nil
}
