package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
)

// A batch's rows go by COPY in PostgreSQL's binary format, encoded here
// column by column into one buffer (no reflection, no boxing of each value,
// no arrays for the server to build and unnest): the server inserts them a
// page at a time. Each row writes the columns its statement names, in
// their order, with the types of the table's columns (int8, int4, text,
// bytea, date, timestamptz, json, text[]).

// copyRows is a binary COPY stream being built.
type copyRows struct {
	b []byte
	// lastDay and lastDays are the operation day date wrote last and its
	// value: a snapshot's rows are mostly of one day, parsed once.
	lastDay  string
	lastDays int32
}

// textOID is PostgreSQL's text type, the element type of a text[].
const textOID = 25

// pgEpochDays is 2000-01-01, where PostgreSQL's binary dates count from,
// in days since the Unix epoch.
const pgEpochDays = 10957

func newCopyRows(size int) *copyRows {
	c := &copyRows{b: make([]byte, 0, size+len(copyBinaryHeader)+2)}
	c.b = append(c.b, copyBinaryHeader...)
	return c
}

func (c *copyRows) row(columns int) { c.b = binary.BigEndian.AppendUint16(c.b, uint16(columns)) } //nolint:gosec // a few columns

func (c *copyRows) null() { c.b = binary.BigEndian.AppendUint32(c.b, math.MaxUint32) } // length -1

func (c *copyRows) int8(v int64) {
	c.b = binary.BigEndian.AppendUint32(c.b, 8)
	c.b = binary.BigEndian.AppendUint64(c.b, uint64(v)) //nolint:gosec // a bigint's bits
}

func (c *copyRows) int4(v int32) {
	c.b = binary.BigEndian.AppendUint32(c.b, 4)
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(v)) //nolint:gosec // an integer's bits
}

func (c *copyRows) text(s string) {
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(s))) //nolint:gosec // a value far below 4 GiB
	c.b = append(c.b, s...)
}

// textOrNull writes "" as NULL (nonEmpty).
func (c *copyRows) textOrNull(s string) {
	if s == "" {
		c.null()
		return
	}
	c.text(s)
}

// bytea writes nil as NULL.
func (c *copyRows) bytea(v []byte) {
	if v == nil {
		c.null()
		return
	}
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(v))) //nolint:gosec // a value far below 4 GiB
	c.b = append(c.b, v...)
}

// timestamptz writes the zero time as NULL.
func (c *copyRows) timestamptz(t time.Time) {
	if t.IsZero() {
		c.null()
		return
	}
	c.int8(t.UnixMicro() - pgEpochMicros)
}

// date writes an operation day (YYYY-MM-DD), "" as NULL. The caller names
// the row in the error (only then: a row's name costs a formatting).
func (c *copyRows) date(day string) error {
	if day == "" {
		c.null()
		return nil
	}
	if day != c.lastDay {
		d, err := time.Parse(time.DateOnly, day)
		if err != nil {
			return fmt.Errorf("operation day %q: %w", day, err)
		}
		c.lastDay, c.lastDays = day, int32(d.Unix()/86400-pgEpochDays) //nolint:gosec // a date
	}
	c.int4(c.lastDays)
	return nil
}

// textArray writes a one-dimensional text[] without NULLs ('{}' when empty).
func (c *copyRows) textArray(items []string) {
	size := 12
	if len(items) > 0 {
		size += 8
	}
	for _, it := range items {
		size += 4 + len(it)
	}
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(size))
	dims := uint32(0)
	if len(items) > 0 {
		dims = 1
	}
	c.b = binary.BigEndian.AppendUint32(c.b, dims)
	c.b = binary.BigEndian.AppendUint32(c.b, 0) // no NULLs
	c.b = binary.BigEndian.AppendUint32(c.b, textOID)
	if len(items) > 0 {
		c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(items))) //nolint:gosec // a few flags
		c.b = binary.BigEndian.AppendUint32(c.b, 1)                  // lower bound
	}
	for _, it := range items {
		c.text(it)
	}
}

// send ends the stream and runs sql (a COPY … FROM STDIN (FORMAT binary))
// with it; rows is how many rows it must write.
func (t *Tx) send(ctx context.Context, c *copyRows, sql string, rows int) error {
	c.b = append(c.b, 0xff, 0xff)
	tag, err := t.copyFrom(ctx, bytes.NewReader(c.b), sql)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != int64(rows) {
		return fmt.Errorf("%d of %d rows written", tag.RowsAffected(), rows)
	}
	return nil
}

// copyResults inserts new results by COPY, each row what queueResultRows
// would insert.
func (t *Tx) copyResults(ctx context.Context, results []Result) error {
	c := newCopyRows(160 * len(results))
	for i := range results {
		r := &results[i]
		c.row(15)
		c.int8(r.MessageID)
		c.textOrNull(cleanText(r.IdentityKey))
		c.bytea(r.PayloadDigest)
		c.bytea(r.ContentDigest)
		c.textOrNull(cleanText(r.Type))
		c.textOrNull(cleanText(r.Styp))
		c.text(r.Status)
		c.textOrNull(r.Reason)
		c.textOrNull(cleanText(r.Note))
		c.textArray(r.Flags)
		c.int4(int32(max(r.Attempts, 1))) //nolint:gosec // a count of attempts, far below 2^31
		c.timestamptz(r.ReceivedAt)
		c.timestamptz(t.now)
		c.timestamptz(t.now)
		if r.Terminal() {
			c.timestamptz(t.now)
		} else {
			c.null()
		}
	}
	if err := t.send(ctx, c, `COPY proc_state (message_id, identity_key, payload_digest, content_digest, msg_type, msg_styp, status,
		reason, note, flags, attempts, received_at, first_seen_at, updated_at, finished_at) FROM STDIN (FORMAT binary)`, len(results)); err != nil {
		return fmt.Errorf("copy %d results: %w", len(results), err)
	}
	return nil
}

// copyBatchEvents inserts a batch's events and their history rows by
// COPY, each row what queueEvents and queueChanges would insert.
func (t *Tx) copyBatchEvents(ctx context.Context, events []engine.Event) error {
	c, err := eventRows(events)
	if err != nil {
		return err
	}
	if err := t.send(ctx, c, copyEventsSQL, len(events)); err != nil {
		return fmt.Errorf("copy %d events: %w", len(events), err)
	}
	if c, err = changeRows(events, t.now); err != nil {
		return err
	}
	if err := t.send(ctx, c, copyChangesSQL, len(events)); err != nil {
		return fmt.Errorf("copy %d flight changes: %w", len(events), err)
	}
	return nil
}

const (
	copyEventsSQL = `COPY msg_event (flid, state_version, operation_day, message_id, notice, event, state, received_at)
		FROM STDIN (FORMAT binary)`
	copyChangesSQL = `COPY flight_change (flid, state_version, message_id, received_at, operation_day, kind, changes, committed_at)
		FROM STDIN (FORMAT binary)`
)

// eventRows encodes events as the msg_event rows of copyEventsSQL.
func eventRows(events []engine.Event) (*copyRows, error) {
	size := 0
	for i := range events {
		size += 64 + len(events[i].Notice) + len(events[i].State)
	}
	c := newCopyRows(size)
	for i := range events {
		e := &events[i]
		c.row(8)
		c.int8(int64(e.FLID)) //nolint:gosec // at most 12 digits
		c.int8(e.Version)
		if err := c.date(e.Day); err != nil {
			return nil, fmt.Errorf("event of flight %d: %w", e.FLID, err)
		}
		c.int8(e.MessageID)
		c.textOrNull(e.Notice)
		c.textOrNull(e.Event)
		c.textOrNull(e.State)
		c.timestamptz(e.ReceivedAt)
	}
	return c, nil
}

// changeRows encodes the history rows of events (committed at now) as the
// flight_change rows of copyChangesSQL.
func changeRows(events []engine.Event, now time.Time) (*copyRows, error) {
	size := 0
	for i := range events {
		size += 80 + len(events[i].Changes)
	}
	c := newCopyRows(size)
	for i := range events {
		e := &events[i]
		c.row(8)
		c.int8(int64(e.FLID)) //nolint:gosec // at most 12 digits
		c.int8(e.Version)
		c.int8(e.MessageID)
		c.timestamptz(e.ReceivedAt)
		if err := c.date(e.Day); err != nil {
			return nil, fmt.Errorf("change of flight %d: %w", e.FLID, err)
		}
		c.text(e.ChangeKind)
		c.text(changesOf(e))
		c.timestamptz(now)
	}
	return c, nil
}
