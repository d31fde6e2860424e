package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Event is one outbox row: a message's effect on a flight, with the
// records it publishes.
type Event struct {
	FLID    flight.FLID
	Version int64
	// Day is the flight's operation day, "" while it has none.
	Day       string
	MessageID int64
	// Notice is the KAFKA_MSG document; Event and State the KAFKA_SCHD
	// record's event (EventUpsert or EventDelete) and document, both ""
	// when the row carries no state (newestStateOnly).
	Notice       string
	Event, State string
	// ReceivedAt is the message's received time (with MessageID its
	// identity), zero for a lifecycle job's.
	ReceivedAt time.Time
	// ChangeKind and Changes are the effect as the flight's history
	// records it (one flight_change row): ChangeUpsert with the fields
	// that changed, old and new values (flight.Diff, rendered by
	// flight.AppendChanges), or a deletion (ChangeDelete, ChangeVictim,
	// ChangeHistory), whose Changes are "[]": the flight's last state is
	// what its earlier changes built.
	ChangeKind string
	Changes    string
}

// The kinds of change a flight's history records.
const (
	// ChangeUpsert: a message created or changed the flight.
	ChangeUpsert = "UPSERT"
	// ChangeDelete: an FDEL deleted it.
	ChangeDelete = "DELETE"
	// ChangeVictim: a full-day snapshot no longer listed it (diff-delete).
	ChangeVictim = "VICTIM"
	// ChangeHistory: the lifecycle job moved it to history.
	ChangeHistory = "HISTORY"
)

// TypeJob is the Meta.Type of a lifecycle job's effects (no message): the
// flights it removes are recorded as ChangeHistory.
const TypeJob = "JOB"

// appendNotice renders the KAFKA_MSG document (processing rules R7.3), keys sorted:
// {"CHANGED":[…],"FLID":"…","MSG_ID":N,"STATE_VERSION":N,"STYP":"…","TYPE":"…"}.
// CHANGED holds field tags (upper-case ASCII); the strings are quoted with
// encoding/json so any META value stays valid JSON.
func appendNotice(buf []byte, changed []string, flid flight.FLID, meta Meta, version int64) []byte {
	quote := appendJSONQuoted
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

// appendJSONQuoted appends s as encoding/json quotes it: as it is between
// quotes when every byte is printable ASCII that encoding/json leaves alone
// (field tags and META codes always are), else by json.Marshal itself (its
// escapes of <, >, &, control characters, U+2028, U+2029 and invalid
// UTF-8).
func appendJSONQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// upsertEvent is the event of a changed flight, computed from the one
// next state that is also written (processing rules R10.1): its notice and its state,
// each measured against the door, whether or not the state is written in
// the end (newestStateOnly): a message is refused or accepted alone,
// whatever the batch it comes in.
func upsertEvent(next *flight.State, changed []string, diff []flight.FieldChange, meta Meta) (Event, error) {
	// The flight's own documents: its state and, for its history, the diff;
	// with the notice, one buffer that the three strings share (one
	// allocation, no copy: the buffer is not written again).
	// The state is rendered into the buffer itself, sized for all three:
	// the notice and the changes are small and their size known, the
	// state's is estimated as CanonicalJSON does for its own buffer.
	size := 256 + 64*(len(next.Scalars)+len(next.Lists)+len(next.Anomalies)) + 128 + 16*len(changed)
	for _, c := range diff {
		size += 48 + len(c.Old) + len(c.New)
	}
	buf, err := flight.AppendCanonicalJSON(make([]byte, 0, size), *next)
	if err != nil {
		return Event{}, fmt.Errorf("state of flight %s: %w", next.FLID, err)
	}
	docEnd := len(buf)
	buf = appendNotice(buf, changed, next.FLID, meta, next.StateVersion)
	noticeEnd := len(buf)
	buf = flight.AppendChanges(buf, diff)
	all := unsafe.String(unsafe.SliceData(buf), len(buf)) //nolint:gosec // buf is not written again, see above
	e := Event{FLID: next.FLID, Version: next.StateVersion, Day: next.OperationDay,
		MessageID: meta.MessageID, Notice: all[docEnd:noticeEnd], Event: EventUpsert, State: all[:docEnd],
		ReceivedAt: meta.ReceivedAt, ChangeKind: ChangeUpsert, Changes: all[noticeEnd:]}
	if err := checkDoors(meta.Door, &e); err != nil {
		return Event{}, err
	}
	return e, nil
}

// deleteEvent is the event of a deleted flight: its tombstone (processing rules
// R7.3) and its notice, whose CHANGED is ["DELETED"]; kind says how it
// went (ChangeDelete, ChangeVictim, ChangeHistory).
func deleteEvent(flid flight.FLID, version int64, day string, meta Meta, kind string) (Event, error) {
	tomb, err := flight.TombstoneJSON(flid, version)
	if err != nil {
		return Event{}, fmt.Errorf("tombstone of flight %s: %w", flid, err)
	}
	n := appendNotice(nil, []string{flight.KeyDeleted}, flid, meta, version)
	return Event{FLID: flid, Version: version, Day: day, MessageID: meta.MessageID,
		Notice: string(n), Event: EventDelete, State: string(tomb), ReceivedAt: meta.ReceivedAt, ChangeKind: kind, Changes: "[]"}, nil
}

// newestStateOnly keeps the state only on the newest version of each
// flight among events written together (one transaction's, in version
// order): the older ones keep their notice alone. The dispatcher sends a
// flight's newest state above its cursor only, and these commit together,
// so no older state of them could ever be sent.
func newestStateOnly(events []Event) {
	if len(events) < 2 {
		return
	}
	newest := make(map[flight.FLID]int, len(events))
	for i := range events {
		if events[i].State == "" {
			continue
		}
		if j, ok := newest[events[i].FLID]; ok {
			if events[j].Version > events[i].Version {
				events[i].Event, events[i].State = "", ""
				continue
			}
			events[j].Event, events[j].State = "", ""
		}
		newest[events[i].FLID] = i
	}
}
