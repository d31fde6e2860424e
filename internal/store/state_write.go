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
		cb := newChildColumns(c)
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
					cb.add(flid, f.RouteKind, int32(ord+1), seq, vals, string(attrs), w.next.StateVersion)
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
		if len(cb.flids) > 0 {
			b.Queue(childInsert(c), cb.args()...)
		}
	}
	return nil
}

// childColumns collects one child table's rows as typed column arrays, in
// the order of childTable.columns (no boxing per value).
type childColumns struct {
	table    childTable
	flids    []int64
	kinds    []string
	ordinals []int32
	seqs     []*string
	values   [][]*string // per item column, then the text column
	attrs    []string
	versions []int64
}

func newChildColumns(c childTable) *childColumns {
	width := len(c.itemColumns)
	if c.textColumn != "" {
		width++
	}
	return &childColumns{table: c, values: make([][]*string, width)}
}

func (cc *childColumns) add(flid int64, kind string, ordinal int32, seq *string, vals []*string, attrs string, version int64) {
	cc.flids = append(cc.flids, flid)
	if cc.table.routeKind {
		cc.kinds = append(cc.kinds, kind)
	}
	cc.ordinals = append(cc.ordinals, ordinal)
	cc.seqs = append(cc.seqs, seq)
	for i, v := range vals {
		cc.values[i] = append(cc.values[i], v)
	}
	cc.attrs = append(cc.attrs, attrs)
	cc.versions = append(cc.versions, version)
}

func (cc *childColumns) args() []any {
	args := []any{cc.flids}
	if cc.table.routeKind {
		args = append(args, cc.kinds)
	}
	args = append(args, cc.ordinals, cc.seqs)
	for _, v := range cc.values {
		args = append(args, v)
	}
	return append(args, cc.attrs, cc.versions)
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

// mainUpsertMany writes many whole main rows with one statement from one
// JSON array ($1): the server reads it in one pass, which costs far less
// than a hundred array parameters whose elements are mostly NULL.
var mainUpsertMany = func() string {
	cols := append([]string{}, bookkeepingColumns...)
	for _, sl := range mainSlots {
		cols = append(cols, sl.column)
	}
	sets := make([]string, 0, len(cols))
	for _, c := range cols {
		if c != "flid" {
			sets = append(sets, c+" = EXCLUDED."+c)
		}
	}
	list := strings.Join(cols, ", ")
	return "INSERT INTO flight_schd (" + list + ") SELECT " + list +
		" FROM json_populate_recordset(NULL::flight_schd, $1::json)" +
		" ON CONFLICT (flid) DO UPDATE SET " + strings.Join(sets, ", ")
}()

// queueMainRows queues the main rows of writes as one statement (a FLID
// may appear once: callers merge a flight's changes first).
func queueMainRows(b *pgx.Batch, writes []stateWrite, loc *time.Location) error {
	if len(writes) == 0 {
		return nil
	}
	buf := make([]byte, 0, 256*len(writes))
	buf = append(buf, '[')
	for i := range writes {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = appendMainRow(buf, &writes[i].next, loc); err != nil {
			return err
		}
	}
	buf = append(buf, ']')
	b.Queue(mainUpsertMany, string(buf))
	return nil
}
