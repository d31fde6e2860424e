package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Door measures a Kafka record the way the producer and the broker count
// it, against the largest record the topics accept. The engine only asks;
// package recsize answers with the producer's codec (the engine imports no
// Kafka client).
type Door interface {
	// Of is the size of the record with key, value and headers in a batch
	// of its own. It must not write to key or value, nor keep them.
	Of(key, value []byte, headers []Header) RecordSize
	// Fits reports whether a record of that size passes.
	Fits(RecordSize) bool
	// Max is the limit in force (kafka.maxRecordBytes, or less).
	Max() int
}

// Header is one Kafka record header.
type Header struct{ Key, Value string }

// RecordSize is a record's size in a batch of its own.
type RecordSize struct {
	// Uncompressed is what the producer counts; Compressed what the broker
	// counts (equal without compression).
	Uncompressed, Compressed int
}

// Outbox record kinds and events. An outbox row (Event) is one effect of a
// message on a flight and carries up to two records: its change notice
// (kind KAFKA_MSG, event NOTICE) and its full state or tombstone (kind
// KAFKA_SCHD, event UPSERT or DELETE), the latter only when the effect is
// the newest version of its flight among the effects written together
// (newestStateOnly).
const (
	KindState  = "KAFKA_SCHD"
	KindNotice = "KAFKA_MSG"

	EventUpsert = "UPSERT"
	EventDelete = "DELETE"
	EventNotice = "NOTICE"
)

// TooLarge refuses a message whose effect would publish a record larger
// than the topics accept (the pump's STATE_TOO_LARGE).
type TooLarge struct {
	FLID flight.FLID
	// Kind is KindState or KindNotice.
	Kind string
	// Size is the record as counted (uncompressed, and compressed as the
	// broker counts it); Limit is kafka.maxRecordBytes.
	Size  RecordSize
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
// event's record (processing rules R7.3); the door counts them, and dispatch's tests
// check that both agree.
func RecordHeaders(event string, version int64, day string) []Header {
	return appendRecordHeaders(make([]Header, 0, 3), event, strconv.FormatInt(version, 10), day)
}

// appendRecordHeaders appends RecordHeaders(event, v, day) to h, v being
// the version as FormatInt writes it.
func appendRecordHeaders(h []Header, event, version, day string) []Header {
	h = append(h, Header{Key: "state-version", Value: version}, Header{Key: "event", Value: event})
	if day != "" {
		h = append(h, Header{Key: "operation-day", Value: day})
	}
	return h
}

// doorRecords is what the door is given of an event's two records besides
// their values: the key and each record's headers, in one allocation (what
// an interface method is given escapes), not one for each key, header list
// and growth of it.
type doorRecords struct {
	key           [20]byte
	state, notice [3]Header
}

// checkDoors measures e's state, then its notice, against the door.
func checkDoors(door Door, e *Event) error {
	if door == nil {
		return nil
	}
	r := new(doorRecords)
	key := strconv.AppendUint(r.key[:0], uint64(e.FLID), 10)
	version := strconv.FormatInt(e.Version, 10)
	for _, kind := range [...]string{KindState, KindNotice} {
		event, payload, headers := EventNotice, e.Notice, r.notice[:0]
		if kind == KindState {
			event, payload, headers = e.Event, e.State, r.state[:0]
		}
		// The door reads the value and keeps none of it: no copy of the
		// document (Door.Of).
		size := door.Of(key, unsafe.Slice(unsafe.StringData(payload), len(payload)), appendRecordHeaders(headers, event, version, e.Day)) //nolint:gosec // read-only view, see above
		if door.Fits(size) {
			continue
		}
		tl := &TooLarge{FLID: e.FLID, Kind: kind, Size: size, Limit: door.Max()}
		tl.Field, tl.FieldBytes, tl.Items = largestField([]byte(payload))
		return tl
	}
	return nil
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
