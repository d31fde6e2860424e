package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// Main rows are written with typed column arrays, one statement for the
// new flights (a plain INSERT) and one for the flights that exist (an
// UPDATE … FROM unnest). The update sets only the columns some flight of
// the batch changed (their union, in mainSlots order, so a column set
// always gives the same statement text); a flight that did not change one
// of them is set to the value it has, taken from its full next state. The
// BEFORE UPDATE trigger flight_schd_guard keeps OPERATION_DAY set once,
// FLID fixed and state_version rising for every writer; since 00015 its
// WHEN clause calls it only when a rule is broken.

// slotsByTag maps a field tag to the indices of its mainSlots.
var slotsByTag = func() map[string][]int {
	out := map[string][]int{}
	for i, sl := range mainSlots {
		out[sl.field.Tag] = append(out[sl.field.Tag], i)
	}
	return out
}()

// mainRowColumns collects the main rows of one statement as typed arrays.
type mainRowColumns struct {
	slots    []int // indices into mainSlots
	withDay  bool
	flids    []int64
	days     []*string
	versions []int64
	messages []int64
	updated  []time.Time
	texts    [][]*string    // per slot; nil for a typed time slot
	times    [][]*time.Time // per slot; nil otherwise
	// textVals and timeVals hold the values texts and times point to, one
	// backing array each for the whole statement rather than one
	// allocation for every value of every row.
	textVals []string
	timeVals []time.Time
}

// newMainRowColumns selects the columns writes change: every changed
// tag's slots, and operation_day when inserting or when a write changed it.
func newMainRowColumns(writes []engine.Write, insert bool) *mainRowColumns {
	use := make([]bool, len(mainSlots))
	c := &mainRowColumns{withDay: insert}
	for _, w := range writes {
		for _, tag := range w.Changed {
			if tag == flight.KeyOperationDay {
				c.withDay = true
				continue
			}
			for _, i := range slotsByTag[tag] {
				use[i] = true
			}
		}
	}
	for i, u := range use {
		if u {
			c.slots = append(c.slots, i)
		}
	}
	c.texts = make([][]*string, len(c.slots))
	c.times = make([][]*time.Time, len(c.slots))
	var nTexts, nTimes int
	for j, i := range c.slots {
		if mainSlots[i].kind == slotTypedTime {
			c.times[j] = make([]*time.Time, 0, len(writes))
			nTimes++
		} else {
			c.texts[j] = make([]*string, 0, len(writes))
			nTexts++
		}
	}
	c.textVals = make([]string, 0, nTexts*len(writes))
	c.timeVals = make([]time.Time, 0, nTimes*len(writes))
	return c
}

// keepText returns a pointer to v kept in textVals. Should textVals ever
// grow, the pointers taken before keep pointing at their values in the
// old array.
func (c *mainRowColumns) keepText(v string) *string {
	c.textVals = append(c.textVals, v)
	return &c.textVals[len(c.textVals)-1]
}

// keepTime is keepText for times.
func (c *mainRowColumns) keepTime(t time.Time) *time.Time {
	c.timeVals = append(c.timeVals, t)
	return &c.timeVals[len(c.timeVals)-1]
}

func (c *mainRowColumns) add(st *flight.State, loc *time.Location) error {
	c.flids = append(c.flids, int64(st.FLID)) //nolint:gosec // at most 12 digits
	if c.withDay {
		c.days = append(c.days, dayPtr(st.OperationDay))
	}
	c.versions = append(c.versions, st.StateVersion)
	c.messages = append(c.messages, st.LastMessageID)
	c.updated = append(c.updated, st.UpdatedAt.UTC())
	for j, i := range c.slots {
		sl := mainSlots[i]
		if sl.kind == slotTypedTime {
			t, ok, err := slotTime(st, sl, loc)
			if err != nil {
				return err
			}
			var tp *time.Time
			if ok {
				tp = c.keepTime(t)
			}
			c.times[j] = append(c.times[j], tp)
			continue
		}
		v, ok, err := slotText(st, sl)
		if err != nil {
			return err
		}
		var vp *string
		if ok {
			vp = c.keepText(v)
		}
		c.texts[j] = append(c.texts[j], vp)
	}
	return nil
}

// slotTime is a typed time column's value (false: NULL).
func slotTime(st *flight.State, sl slot, loc *time.Location) (time.Time, bool, error) {
	v, ok := st.Scalars[sl.field.Tag]
	if !ok || v == "" {
		return time.Time{}, false, nil
	}
	t, err := flight.ParseSISTime(v, loc)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("flight %s %s: %w", st.FLID, sl.field.Tag, err)
	}
	return t.UTC(), true, nil
}

// slotText is a text or jsonb column's value (false: NULL). Anomaly
// attributes are a JSON object of the keys without a column; records are
// their canonical JSON array.
func slotText(st *flight.State, sl slot) (string, bool, error) {
	switch sl.kind {
	case slotScalar:
		if v, ok := st.Scalars[sl.field.Tag]; ok {
			return v, true, nil
		}
	case slotAnomalyCol:
		if v, ok := st.Anomalies[sl.field.Tag][sl.key]; ok {
			return v, true, nil
		}
	case slotAnomalyRest:
		a, ok := st.Anomalies[sl.field.Tag]
		if !ok || len(a) == 0 {
			return "", false, nil
		}
		rest := map[string]string{}
		for k, v := range a {
			if !anomalyHasColumn(sl.field, k) {
				rest[k] = v
			}
		}
		js, err := json.Marshal(rest)
		if err != nil {
			return "", false, fmt.Errorf("flight %s %s: %w", st.FLID, sl.field.Tag, err)
		}
		return string(js), true, nil
	case slotRecord:
		items, ok := st.Lists[sl.field.Tag]
		if !ok || len(items) == 0 {
			return "", false, nil
		}
		js, err := json.Marshal(items)
		if err != nil {
			return "", false, fmt.Errorf("flight %s %s: %w", st.FLID, sl.field.Tag, err)
		}
		return string(js), true, nil
	}
	return "", false, nil
}

// columns returns the statement's column names, their SQL array types,
// how the column is read from its unnest alias, and the arguments, in the
// same order.
func (c *mainRowColumns) columns() (names, types, reads []string, args []any) {
	add := func(name, typ, read string, arg any) {
		names, types, reads, args = append(names, name), append(types, typ), append(reads, read), append(args, arg)
	}
	add("flid", "bigint[]", "u.flid", c.flids)
	if c.withDay {
		add("operation_day", "text[]", "u.operation_day::date", c.days)
	}
	add("state_version", "bigint[]", "u.state_version", c.versions)
	add("last_message_id", "bigint[]", "u.last_message_id", c.messages)
	add("updated_at", "timestamptz[]", "u.updated_at", c.updated)
	for j, i := range c.slots {
		sl := mainSlots[i]
		switch sl.kind {
		case slotTypedTime:
			add(sl.column, "timestamptz[]", "u."+sl.column, c.times[j])
		case slotAnomalyRest:
			add(sl.column, "text[]", "u."+sl.column+"::jsonb", c.texts[j])
		default:
			add(sl.column, "text[]", "u."+sl.column, c.texts[j])
		}
	}
	return names, types, reads, args
}

// from is the statement's row source: one unnest of every array.
func from(names, types []string) string {
	params := make([]string, len(names))
	for i, t := range types {
		params[i] = "$" + strconv.Itoa(i+1) + "::" + t
	}
	return "unnest(" + strings.Join(params, ", ") + ") AS u(" + strings.Join(names, ", ") + ")"
}

func (c *mainRowColumns) insertSQL() (string, []any) {
	names, types, reads, args := c.columns()
	return "INSERT INTO flight_schd (" + strings.Join(names, ", ") + ") SELECT " + strings.Join(reads, ", ") +
		" FROM " + from(names, types), args
}

func (c *mainRowColumns) updateSQL() (string, []any) {
	names, types, reads, args := c.columns()
	sets := make([]string, 0, len(names)-1)
	for i, n := range names {
		if n != "flid" {
			sets = append(sets, n+" = "+reads[i])
		}
	}
	return "UPDATE flight_schd AS f SET " + strings.Join(sets, ", ") + " FROM " + from(names, types) +
		" WHERE f.flid = u.flid", args
}

// queueMainRowsCopying queues the main rows of writes: one INSERT of the
// new flights, one UPDATE of the existing ones (a FLID may appear once:
// callers merge a flight's changes first). The update must find every
// flight it was given; a flight the store loaded but the database no
// longer holds fails the batch (retried on a fresh load). When there are
// copyMin new flights or more (copyMin > 0), their rows are left out of b
// and returned instead, for a COPY that must run before b.
func queueMainRowsCopying(b *pgx.Batch, writes []engine.Write, loc *time.Location, copyMin int) (*mainRowColumns, error) {
	fresh, existing := splitNew(writes, func(w engine.Write) bool { return w.IsNew })
	var copies *mainRowColumns
	if len(fresh) > 0 {
		c := newMainRowColumns(fresh, true)
		for i := range fresh {
			if err := c.add(&fresh[i].Next, loc); err != nil {
				return nil, err
			}
		}
		if copyMin > 0 && len(fresh) >= copyMin {
			copies = c
		} else {
			sql, args := c.insertSQL()
			b.Queue(sql, args...)
		}
	}
	if len(existing) > 0 {
		c := newMainRowColumns(existing, false)
		for i := range existing {
			if err := c.add(&existing[i].Next, loc); err != nil {
				return nil, err
			}
		}
		sql, args := c.updateSQL()
		want := int64(len(existing))
		b.Queue(sql, args...).Exec(func(ct pgconn.CommandTag) error {
			if got := ct.RowsAffected(); got != want {
				return fmt.Errorf("update main rows: %d of %d flights found: a flight loaded in this transaction is gone", got, want)
			}
			return nil
		})
	}
	return copies, nil
}

// copyRows encodes the rows for COPY, with the statement that inserts
// them: each row what insertSQL would insert.
func (c *mainRowColumns) copyRows() (*copyRows, string, error) {
	names, _, _, _ := c.columns()
	size := 0
	for _, col := range c.texts {
		for _, v := range col {
			if v != nil {
				size += 4 + len(*v)
			}
		}
	}
	r := newCopyRows(size + len(c.flids)*(8*len(names)+64))
	for i, flid := range c.flids {
		r.row(len(names))
		r.int8(flid)
		if c.withDay {
			day := ""
			if d := c.days[i]; d != nil {
				day = *d
			}
			if err := r.date(day); err != nil {
				return nil, "", fmt.Errorf("flight %d: %w", flid, err)
			}
		}
		r.int8(c.versions[i])
		r.int8(c.messages[i])
		r.int8(c.updated[i].UnixMicro() - pgEpochMicros)
		for j, s := range c.slots {
			switch mainSlots[s].kind {
			case slotTypedTime:
				if t := c.times[j][i]; t != nil {
					r.int8(t.UnixMicro() - pgEpochMicros)
				} else {
					r.null()
				}
			case slotAnomalyRest:
				if v := c.texts[j][i]; v != nil {
					r.jsonb(*v)
				} else {
					r.null()
				}
			default:
				r.textPtr(c.texts[j][i])
			}
		}
	}
	return r, "COPY flight_schd (" + strings.Join(names, ", ") + ") FROM STDIN (FORMAT binary)", nil
}

func anomalyHasColumn(f flight.FieldSpec, key string) bool {
	if key == flight.TextKey {
		return true
	}
	for _, c := range f.ItemColumns {
		if c == key {
			return true
		}
	}
	return false
}
