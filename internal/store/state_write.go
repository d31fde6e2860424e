package store

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// stateWrite is one flight's next full state and what changed in it.
type stateWrite struct {
	next flight.State
	// changed lists the field tags whose value changed; for a new flight
	// every present field counts as changed.
	changed []string
	isNew   bool
}

func (w stateWrite) touches(tag string) bool {
	return w.isNew || slices.Contains(w.changed, tag)
}

// childInsert writes one child table's rows from parallel arrays, so any
// number of items costs one statement.
func childInsert(c childTable) string {
	cols := c.columns()
	params := make([]string, len(cols))
	selects := make([]string, len(cols))
	for i, col := range cols {
		typ := "text[]"
		switch col {
		case "flid", "record_version":
			typ = "bigint[]"
		case "ordinal":
			typ = "int[]"
		}
		params[i] = fmt.Sprintf("$%d::%s", i+1, typ)
		selects[i] = col
		if col == "attrs" {
			selects[i] = "attrs::jsonb"
		}
	}
	return "INSERT INTO " + c.name + " (" + strings.Join(cols, ", ") + ") SELECT " + strings.Join(selects, ", ") +
		" FROM unnest(" + strings.Join(params, ", ") + ") AS u(" + strings.Join(cols, ", ") + ")"
}

// queueStateWrites adds to b every statement that makes the database hold
// writes' states: whole main rows, and child rows only for the collections
// that changed (delete then insert). The number of statements depends on
// the number of flights, the number of round trips does not.
func queueStateWrites(b *pgx.Batch, writes []stateWrite, loc *time.Location) error {
	if err := queueMainRows(b, writes, loc); err != nil {
		return err
	}
	for _, c := range childTables {
		cols := c.columns()
		arrays := make([][]any, len(cols))
		var rows int
		for _, f := range c.fields {
			var stale []int64
			for _, w := range writes {
				if !w.touches(f.Tag) {
					continue
				}
				flid := int64(w.next.FLID) //nolint:gosec // at most 12 digits
				if !w.isNew {
					stale = append(stale, flid)
				}
				for ord, it := range w.next.Lists[f.Tag] {
					vals, seq, attrs, err := splitItem(it, f.SeqAttr, c.itemColumns, c.textColumn)
					if err != nil {
						return fmt.Errorf("flight %s %s[%d]: %w", w.next.FLID, f.Tag, ord+1, err)
					}
					row := []any{flid}
					if c.routeKind {
						row = append(row, f.RouteKind)
					}
					row = append(row, int32(ord+1), seq)
					for _, v := range vals {
						row = append(row, v)
					}
					row = append(row, string(attrs), w.next.StateVersion)
					for k, v := range row {
						arrays[k] = append(arrays[k], v)
					}
					rows++
				}
			}
			if len(stale) > 0 {
				if c.routeKind {
					b.Queue("DELETE FROM "+c.name+" WHERE flid = ANY($1) AND route_kind = $2", stale, f.RouteKind)
				} else {
					b.Queue("DELETE FROM "+c.name+" WHERE flid = ANY($1)", stale)
				}
			}
		}
		if rows > 0 {
			b.Queue(childInsert(c), typedArrays(cols, arrays)...)
		}
	}
	return nil
}

// typedArrays turns the collected columns into slices pgx encodes as
// PostgreSQL arrays.
func typedArrays(cols []string, arrays [][]any) []any {
	out := make([]any, len(cols))
	for i, col := range cols {
		switch col {
		case "flid", "record_version":
			a := make([]int64, len(arrays[i]))
			for j, v := range arrays[i] {
				a[j] = v.(int64)
			}
			out[i] = a
		case "ordinal":
			a := make([]int32, len(arrays[i]))
			for j, v := range arrays[i] {
				a[j] = v.(int32)
			}
			out[i] = a
		default:
			a := make([]*string, len(arrays[i]))
			for j, v := range arrays[i] {
				switch s := v.(type) {
				case string:
					a[j] = &s
				case *string:
					a[j] = s
				}
			}
			out[i] = a
		}
	}
	return out
}

// queueDeletes removes flights with all their child rows: children first,
// explicitly, since the schema has no cascade by design.
func queueDeletes(b *pgx.Batch, flids []int64) {
	if len(flids) == 0 {
		return
	}
	for _, c := range childTables {
		b.Queue("DELETE FROM "+c.name+" WHERE flid = ANY($1)", flids)
	}
	b.Queue("DELETE FROM flight_schd WHERE flid = ANY($1)", flids)
}

// mainUpsertMany writes many whole main rows with one statement from
// per-column arrays.
var mainUpsertMany = func() string {
	cols := append([]string{}, bookkeepingColumns...)
	types := []string{"bigint[]", "text[]", "bigint[]", "bigint[]", "timestamptz[]"}
	selects := []string{"flid", "operation_day::date", "state_version", "last_message_id", "updated_at"}
	for _, sl := range mainSlots {
		cols = append(cols, sl.column)
		switch sl.kind {
		case slotTypedTime:
			types = append(types, "timestamptz[]")
			selects = append(selects, sl.column)
		case slotAnomalyRest:
			types = append(types, "text[]")
			selects = append(selects, sl.column+"::jsonb")
		default:
			types = append(types, "text[]")
			selects = append(selects, sl.column)
		}
	}
	params := make([]string, len(cols))
	sets := make([]string, 0, len(cols))
	for i, c := range cols {
		params[i] = fmt.Sprintf("$%d::%s", i+1, types[i])
		if c != "flid" {
			sets = append(sets, c+" = EXCLUDED."+c)
		}
	}
	return "INSERT INTO flight_schd (" + strings.Join(cols, ", ") + ") SELECT " + strings.Join(selects, ", ") +
		" FROM unnest(" + strings.Join(params, ", ") + ") AS u(" + strings.Join(cols, ", ") + ")" +
		" ON CONFLICT (flid) DO UPDATE SET " + strings.Join(sets, ", ")
}()

// queueMainRows queues the main rows of writes as one statement (a FLID
// may appear once: callers merge a flight's changes first).
func queueMainRows(b *pgx.Batch, writes []stateWrite, loc *time.Location) error {
	if len(writes) == 0 {
		return nil
	}
	width := len(bookkeepingColumns) + len(mainSlots)
	flids, versions, lastMsgs := make([]int64, len(writes)), make([]int64, len(writes)), make([]int64, len(writes))
	updated := make([]time.Time, len(writes))
	texts := make([][]*string, width) // by column; nil for non-text columns
	times := make([][]*time.Time, width)
	for c := 1; c < width; c++ {
		texts[c] = make([]*string, len(writes))
		times[c] = make([]*time.Time, len(writes))
	}
	for i := range writes {
		row, err := mainRowArgs(&writes[i].next, loc)
		if err != nil {
			return err
		}
		flids[i], versions[i], lastMsgs[i], updated[i] = row[0].(int64), row[2].(int64), row[3].(int64), row[4].(time.Time)
		for c, v := range row {
			switch v := v.(type) {
			case string:
				texts[c][i] = &v
			case time.Time:
				times[c][i] = &v
			}
		}
	}
	args := []any{flids, texts[1], versions, lastMsgs, updated}
	for j, sl := range mainSlots {
		c := len(bookkeepingColumns) + j
		if sl.kind == slotTypedTime {
			args = append(args, times[c])
		} else {
			args = append(args, texts[c])
		}
	}
	b.Queue(mainUpsertMany, args...)
	return nil
}
