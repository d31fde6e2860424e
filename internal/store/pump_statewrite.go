package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

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
func queueStateWrites(b *pgx.Batch, writes []engine.Write, loc *time.Location) error {
	_, _, err := queueStateWritesCopying(b, writes, loc, 0)
	return err
}

// snapshotCopyMin is the number of a snapshot chunk's new main rows, of
// one child table's rows or of its events from which they go by COPY,
// encoded here (while the server writes what went before) into
// PostgreSQL's binary format: no arrays for the driver to build and the
// server to unnest, and the server inserts a page at a time. Every
// chunk's rows go so; a variable so tests can take the arrays' path too.
var snapshotCopyMin = 1

// queueStateWritesCopying is queueStateWrites that leaves out of b, when
// copyMin > 0, the new flights' main rows if there are at least copyMin
// of them, for a COPY (mainRowColumns.copyRows) that must run before b,
// and each child table with at least copyMin new rows, for a COPY
// (childColumns.copyRows) that must run after b (main rows and deletes).
func queueStateWritesCopying(b *pgx.Batch, writes []engine.Write, loc *time.Location, copyMin int) (*mainRowColumns, []*childColumns, error) {
	main, err := queueMainRowsCopying(b, writes, loc, copyMin)
	if err != nil {
		return nil, nil, err
	}
	var copies []*childColumns
	for _, c := range childTables {
		cb := newChildColumns(c)
		var replaced []staleLists
		for _, f := range c.fields {
			stale := staleLists{kind: f.RouteKind}
			for _, w := range writes {
				if !w.Touches(f.Tag) {
					continue
				}
				flid := int64(w.Next.FLID) //nolint:gosec // at most 12 digits
				if !w.IsNew {
					stale.flids = append(stale.flids, flid)
					stale.counts = append(stale.counts, int32(len(w.Next.Lists[f.Tag]))) //nolint:gosec // a collection's items, far below 2^31
				}
				for ord, it := range w.Next.Lists[f.Tag] {
					vals, seq, attrs, err := splitItem(it, f.SeqAttr, c.itemColumns, c.textColumn)
					if err != nil {
						return nil, nil, fmt.Errorf("flight %s %s[%d]: %w", w.Next.FLID, f.Tag, ord+1, err)
					}
					cb.add(flid, f.RouteKind, int32(ord+1), seq, vals, string(attrs), w.Next.StateVersion)
				}
			}
			if len(stale.flids) > 0 {
				replaced = append(replaced, stale)
			}
		}
		switch {
		case copyMin > 0 && len(cb.flids) >= copyMin:
			for _, st := range replaced {
				queueChildDelete(b, c, st, false)
			}
			copies = append(copies, cb)
		case len(replaced) == 0:
			if len(cb.flids) > 0 {
				b.Queue(childInsert(c), cb.args()...)
			}
		default:
			// A changed collection of a flight that exists keeps the rows
			// it still has in place: an update of the row at its ordinal
			// (HOT, the key does not change) instead of a delete, an
			// insert and an index entry; only the items past the new
			// length go and only those past the old one are inserted.
			for _, st := range replaced {
				queueChildDelete(b, c, st, true)
			}
			if len(cb.flids) > 0 {
				b.Queue(childUpsert(c), cb.args()...)
			}
		}
	}
	return main, copies, nil
}

// staleLists are the flights that exist whose collection of one field
// (of one route kind) a write replaces, with the number of items each has
// now.
type staleLists struct {
	kind   string
	flids  []int64
	counts []int32
}

// queueChildDelete removes the stale rows of one field of c: all of them,
// or with surplus only those past each flight's new item count.
func queueChildDelete(b *pgx.Batch, c childTable, st staleLists, surplus bool) {
	if !surplus {
		if c.routeKind {
			b.Queue("DELETE FROM "+c.name+" WHERE "+flidIn+" AND route_kind = $2", st.flids, st.kind)
		} else {
			b.Queue("DELETE FROM "+c.name+" WHERE "+flidIn, st.flids)
		}
		return
	}
	if c.routeKind {
		b.Queue(childSurplusDelete(c), st.flids, st.counts, st.kind)
		return
	}
	b.Queue(childSurplusDelete(c), st.flids, st.counts)
}

// childSurplusDelete deletes the rows of c past each flight's item count
// ($1 flids, $2 counts; $3 the route kind for flight_route_point).
func childSurplusDelete(c childTable) string {
	sql := "DELETE FROM " + c.name + " AS c USING unnest($1::bigint[], $2::int[]) AS s(flid, n) WHERE c.flid = s.flid AND c.ordinal > s.n"
	if c.routeKind {
		sql += " AND c.route_kind = $3"
	}
	return sql
}

// childUpsert writes one child table's rows from the parallel arrays of
// childInsert: a row whose key (flid, route kind, ordinal) exists is
// updated in place, the others are inserted. Every column is set, as a
// fresh insert would (created_at is the transaction's time).
//
// One MERGE joins the rows with the table once: its update changes a row
// as a plain UPDATE does (no lock of the old row first, as INSERT … ON
// CONFLICT DO UPDATE takes, so still one HOT record a row). It replaces
// an update in a CTE whose RETURNING the insert then anti-joined, which
// materialised the rows and the updated keys again and hashed them: a
// tenth to a third more backend CPU for the same rows. A FLID appears
// once in a batch's writes and an ordinal once in its list, so no two
// rows have one key, which MERGE would refuse.
func childUpsert(c childTable) string {
	insert := childInsert(c)
	from := insert[strings.Index(insert, " FROM unnest(")+len(" FROM "):]
	cols := c.columns()
	key := []string{"flid", "ordinal"}
	if c.routeKind {
		key = append(key, "route_kind")
	}
	var sets, match []string
	for _, col := range cols {
		if slices.Contains(key, col) {
			match = append(match, "c."+col+" = u."+col)
			continue
		}
		read := "u." + col
		if col == "attrs" {
			read += "::jsonb"
		}
		sets = append(sets, col+" = "+read)
	}
	sets = append(sets, "created_at = now()")
	values := make([]string, len(cols))
	for i, col := range cols {
		values[i] = "u." + col
		if col == "attrs" {
			values[i] += "::jsonb"
		}
	}
	return "MERGE INTO " + c.name + " AS c USING (SELECT * FROM " + from + ") AS u ON " + strings.Join(match, " AND ") +
		" WHEN MATCHED THEN UPDATE SET " + strings.Join(sets, ", ") +
		" WHEN NOT MATCHED THEN INSERT (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(values, ", ") + ")"
}

// copyRows encodes the table's rows for COPY, with the statement that
// inserts them: each row what childInsert would insert.
func (cc *childColumns) copyRows() (*copyRows, string) {
	width := len(cc.table.columns())
	size := 0
	for i := range cc.flids {
		size += 64 + len(cc.attrs[i])
		for _, col := range cc.values {
			if v := col[i]; v != nil {
				size += 4 + len(*v)
			}
		}
	}
	c := newCopyRows(size)
	for i, flid := range cc.flids {
		c.row(width)
		c.int8(flid)
		if cc.table.routeKind {
			c.text(cc.kinds[i])
		}
		c.int4(cc.ordinals[i])
		c.textPtr(cc.seqs[i])
		for _, col := range cc.values {
			c.textPtr(col[i])
		}
		c.jsonb(cc.attrs[i])
		c.int8(cc.versions[i])
	}
	return c, "COPY " + cc.table.name + " (" + strings.Join(cc.table.columns(), ", ") + ") FROM STDIN (FORMAT binary)"
}

// textPtr writes nil as NULL.
func (c *copyRows) textPtr(s *string) {
	if s == nil {
		c.null()
		return
	}
	c.text(*s)
}

// jsonb writes a JSON text as jsonb (its binary format is a version byte,
// 1, then the text, which the server parses as it parses the text form).
func (c *copyRows) jsonb(s string) {
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(s)+1)) //nolint:gosec // a value far below 4 GiB
	c.b = append(c.b, 1)
	c.b = append(c.b, s...)
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

// queueDeletes removes flights with all their child rows (children first,
// explicitly, since the schema has no cascade by design) and takes them off
// their day's roster. It is the one place a flight leaves schd_gen_flid by
// FLID; a full-day snapshot's roster replace removes by day.
func queueDeletes(b *pgx.Batch, flids []int64) {
	if len(flids) == 0 {
		return
	}
	for _, c := range childTables {
		b.Queue("DELETE FROM "+c.name+" WHERE "+flidIn, flids)
	}
	b.Queue("DELETE FROM flight_schd WHERE "+flidIn, flids)
	b.Queue("DELETE FROM schd_gen_flid WHERE "+flidIn, flids)
}

// deleteFlights deletes flights (a snapshot's victims or a sweep's) with
// their events: it takes their versions and queues their deletions, their
// tombstones and history rows in b.
func (t *Tx) deleteFlights(ctx context.Context, b *pgx.Batch, meta Meta, deletes []flight.State) (map[flight.FLID]int64, error) {
	versions, err := t.nextVersions(ctx, len(deletes))
	if err != nil {
		return nil, err
	}
	events, deleted, err := engine.Tombstones(deletes, versions, meta)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(deletes))
	for i, d := range deletes {
		ids[i] = int64(d.FLID) //nolint:gosec // at most 12 digits
	}
	queueDeletes(b, ids)
	queueEvents(b, events)
	queueChanges(b, events, t.now)
	return deleted, nil
}
