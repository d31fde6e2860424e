package store

import (
	"context"
	"fmt"
	"maps"
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
	copies, err := queueStateWritesCopying(b, writes, loc, 0)
	if err != nil {
		return err
	}
	if len(copies) > 0 {
		return fmt.Errorf("state writes: %d child tables left for COPY", len(copies))
	}
	return nil
}

// copyChildMin is the number of a child table's rows from which a large
// write (a snapshot) sends them with COPY: pgx encodes the rows while the
// server inserts them, instead of encoding everything before it starts.
const copyChildMin = 2000

// queueStateWritesCopying is queueStateWrites that leaves each child
// table with at least copyMin new rows (copyMin > 0) out of b and returns
// it for copyChildren, which must run after b (main rows and deletes).
func queueStateWritesCopying(b *pgx.Batch, writes []engine.Write, loc *time.Location, copyMin int) ([]*childColumns, error) {
	if err := queueMainRows(b, writes, loc); err != nil {
		return nil, err
	}
	var copies []*childColumns
	for _, c := range childTables {
		cb := newChildColumns(c)
		for _, f := range c.fields {
			var stale []int64
			for _, w := range writes {
				if !w.Touches(f.Tag) {
					continue
				}
				flid := int64(w.Next.FLID) //nolint:gosec // at most 12 digits
				if !w.IsNew {
					stale = append(stale, flid)
				}
				for ord, it := range w.Next.Lists[f.Tag] {
					vals, seq, attrs, err := splitItem(it, f.SeqAttr, c.itemColumns, c.textColumn)
					if err != nil {
						return nil, fmt.Errorf("flight %s %s[%d]: %w", w.Next.FLID, f.Tag, ord+1, err)
					}
					cb.add(flid, f.RouteKind, int32(ord+1), seq, vals, string(attrs), w.Next.StateVersion)
				}
			}
			if len(stale) > 0 {
				if c.routeKind {
					b.Queue("DELETE FROM "+c.name+" WHERE "+flidIn+" AND route_kind = $2", stale, f.RouteKind)
				} else {
					b.Queue("DELETE FROM "+c.name+" WHERE "+flidIn, stale)
				}
			}
		}
		switch {
		case copyMin > 0 && len(cb.flids) >= copyMin:
			copies = append(copies, cb)
		case len(cb.flids) > 0:
			b.Queue(childInsert(c), cb.args()...)
		}
	}
	return copies, nil
}

// copyChildren inserts the rows of each table with COPY (one round trip
// per table).
func (t *Tx) copyChildren(ctx context.Context, copies []*childColumns) error {
	for _, cc := range copies {
		src := &childCopySource{cc: cc, i: -1}
		n, err := t.tx.CopyFrom(ctx, pgx.Identifier{cc.table.name}, cc.table.columns(), src)
		if err != nil {
			return fmt.Errorf("copy %s: %w", cc.table.name, err)
		}
		if n != int64(len(cc.flids)) {
			return fmt.Errorf("copy %s: %d of %d rows written", cc.table.name, n, len(cc.flids))
		}
	}
	return nil
}

// childCopySource feeds one table's collected rows to CopyFrom in the
// order of childTable.columns.
type childCopySource struct {
	cc  *childColumns
	i   int
	row []any
}

func (s *childCopySource) Next() bool { s.i++; return s.i < len(s.cc.flids) }

func (s *childCopySource) Values() ([]any, error) {
	cc, i := s.cc, s.i
	s.row = append(s.row[:0], cc.flids[i])
	if cc.table.routeKind {
		s.row = append(s.row, cc.kinds[i])
	}
	s.row = append(s.row, cc.ordinals[i], cc.seqs[i])
	for _, col := range cc.values {
		s.row = append(s.row, col[i])
	}
	s.row = append(s.row, cc.attrs[i], cc.versions[i])
	return s.row, nil
}

func (s *childCopySource) Err() error { return nil }

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

// writeFlights writes the changed flights of a snapshot's chunk or a
// sweep with their events: it takes their versions, has the engine stamp
// them, queues or sends their rows, and queues their events and the
// deletions' tombstones in b.
func (t *Tx) writeFlights(ctx context.Context, b *pgx.Batch, meta Meta, writes []engine.Write, deletes []flight.State) (map[flight.FLID]int64, error) {
	versions, err := t.nextVersions(ctx, len(writes)+len(deletes))
	if err != nil {
		return nil, err
	}
	assigned := engine.Stamp(writes, versions, meta, t.now)
	// The state rows go out first; the server writes them while the
	// events are rendered here (one more round trip, not one per flight).
	if len(writes) > 0 {
		sb := &pgx.Batch{}
		copies, err := queueStateWritesCopying(sb, writes, t.store.loc, copyChildMin)
		if err != nil {
			return nil, err
		}
		sent := t.tx.SendBatch(ctx, sb)
		events, evErr := engine.Upserts(writes, meta)
		if err := readBatch(sent, sb); err != nil {
			return nil, fmt.Errorf("write flights: %w", err)
		}
		if evErr != nil {
			return nil, evErr
		}
		if err := t.copyChildren(ctx, copies); err != nil {
			return nil, fmt.Errorf("write flights: %w", err)
		}
		if len(events) >= copyEventsMin {
			if err := t.copyEvents(ctx, events); err != nil {
				return nil, err
			}
			if err := t.copyChanges(ctx, events); err != nil {
				return nil, err
			}
		} else {
			queueEvents(b, events)
			queueChanges(b, events, t.now)
		}
	}
	events, deleted, err := engine.Tombstones(deletes, versions[len(writes):], meta)
	if err != nil {
		return nil, err
	}
	maps.Copy(assigned, deleted)
	ids := make([]int64, len(deletes))
	for i, d := range deletes {
		ids[i] = int64(d.FLID) //nolint:gosec // at most 12 digits
	}
	queueDeletes(b, ids)
	queueEvents(b, events)
	queueChanges(b, events, t.now)
	return assigned, nil
}
