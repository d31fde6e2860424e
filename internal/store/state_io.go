package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// slotKind says how one flight_schd column maps to the state.
type slotKind uint8

const (
	slotScalar      slotKind = iota + 1 // text column = Scalars[tag]
	slotTypedTime                       // derived UTC instant, written only
	slotAnomalyCol                      // text column = Anomalies[tag][key]
	slotAnomalyRest                     // jsonb: the anomaly's other keys
	slotRecord                          // text column: canonical JSON array of items
)

type slot struct {
	column string
	kind   slotKind
	field  flight.FieldSpec
	key    string // anomaly item key for slotAnomalyCol
}

// mainSlots is the flight_schd layout after the bookkeeping columns.
var mainSlots = func() []slot {
	var out []slot
	for _, f := range flight.Fields() {
		switch f.Kind {
		case flight.KindScalar:
			out = append(out, slot{column: f.Column, kind: slotScalar, field: f})
			if f.TypedTimeColumn != "" {
				out = append(out, slot{column: f.TypedTimeColumn, kind: slotTypedTime, field: f})
			}
		case flight.KindAnomaly:
			for _, k := range f.ItemColumns {
				out = append(out, slot{column: f.Column + "_" + strings.ToLower(k), kind: slotAnomalyCol, field: f, key: k})
			}
			out = append(out, slot{column: f.TextColumn, kind: slotAnomalyCol, field: f, key: flight.TextKey})
			out = append(out, slot{column: f.Column + "_attrs", kind: slotAnomalyRest, field: f})
		case flight.KindRecord:
			out = append(out, slot{column: f.Column, kind: slotRecord, field: f})
		}
	}
	return out
}()

// readSlots are the mainSlots a read needs (derived columns are not state).
var readSlots = func() []slot {
	var out []slot
	for _, s := range mainSlots {
		if s.kind != slotTypedTime {
			out = append(out, s)
		}
	}
	return out
}()

func columnList(slots []slot) string {
	cols := make([]string, len(slots))
	for i, s := range slots {
		cols[i] = s.column
	}
	return strings.Join(cols, ", ")
}

// mainSelect reads main rows; %s is the WHERE clause.
var mainSelect = "SELECT flid, operation_day::text, state_version, last_message_id, updated_at, " +
	columnList(readSlots) + " FROM flight_schd WHERE %s ORDER BY flid"

// appendMainRow appends st's main row as one JSON object keyed by column
// name, for json_populate_recordset: an absent key is a NULL column.
// Anomaly attributes are an embedded object (a jsonb column); records are
// their canonical JSON array as a string (a text column).
func appendMainRow(buf []byte, st *flight.State, loc *time.Location) ([]byte, error) {
	buf = append(buf, `{"flid":`...)
	buf = strconv.AppendInt(buf, int64(st.FLID), 10) //nolint:gosec // at most 12 digits
	if st.OperationDay != "" {
		buf = append(buf, `,"operation_day":`...)
		buf = flight.AppendJSONString(buf, st.OperationDay)
	}
	buf = append(buf, `,"state_version":`...)
	buf = strconv.AppendInt(buf, st.StateVersion, 10)
	buf = append(buf, `,"last_message_id":`...)
	buf = strconv.AppendInt(buf, st.LastMessageID, 10)
	buf = append(buf, `,"updated_at":"`...)
	buf = st.UpdatedAt.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, '"')
	key := func(column string) {
		buf = append(buf, ',', '"')
		buf = append(buf, column...)
		buf = append(buf, '"', ':')
	}
	for _, sl := range mainSlots {
		switch sl.kind {
		case slotScalar:
			if v, ok := st.Scalars[sl.field.Tag]; ok {
				key(sl.column)
				buf = flight.AppendJSONString(buf, v)
			}
		case slotTypedTime:
			v, ok := st.Scalars[sl.field.Tag]
			if !ok || v == "" {
				continue
			}
			t, err := flight.ParseSISTime(v, loc)
			if err != nil {
				return nil, fmt.Errorf("flight %s %s: %w", st.FLID, sl.field.Tag, err)
			}
			key(sl.column)
			buf = append(buf, '"')
			buf = t.UTC().AppendFormat(buf, time.RFC3339Nano)
			buf = append(buf, '"')
		case slotAnomalyCol:
			if v, ok := st.Anomalies[sl.field.Tag][sl.key]; ok {
				key(sl.column)
				buf = flight.AppendJSONString(buf, v)
			}
		case slotAnomalyRest:
			a, ok := st.Anomalies[sl.field.Tag]
			if !ok || len(a) == 0 {
				continue
			}
			rest := map[string]string{}
			for k, v := range a {
				if !anomalyHasColumn(sl.field, k) {
					rest[k] = v
				}
			}
			js, err := json.Marshal(rest)
			if err != nil {
				return nil, fmt.Errorf("flight %s %s: %w", st.FLID, sl.field.Tag, err)
			}
			key(sl.column)
			buf = append(buf, js...)
		case slotRecord:
			items, ok := st.Lists[sl.field.Tag]
			if !ok || len(items) == 0 {
				continue
			}
			js, err := json.Marshal(items)
			if err != nil {
				return nil, fmt.Errorf("flight %s %s: %w", st.FLID, sl.field.Tag, err)
			}
			key(sl.column)
			buf = flight.AppendJSONString(buf, string(js))
		}
	}
	return append(buf, '}'), nil
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

// scanMain reads one main row into a fresh state.
func scanMain(rows pgx.Rows) (flight.State, error) {
	var (
		flid    int64
		day     *string
		version int64
		lastMsg int64
		updated time.Time
	)
	vals := make([]*string, len(readSlots))
	dest := []any{&flid, &day, &version, &lastMsg, &updated}
	for i := range vals {
		dest = append(dest, &vals[i])
	}
	if err := rows.Scan(dest...); err != nil {
		return flight.State{}, fmt.Errorf("scan flight row: %w", err)
	}
	s := flight.NewState(flight.FLID(flid)) //nolint:gosec // the column is checked 0..999999999999
	if day != nil {
		s.OperationDay = *day
	}
	s.StateVersion, s.LastMessageID, s.UpdatedAt = version, lastMsg, updated.UTC()
	for i, sl := range readSlots {
		v := vals[i]
		if v == nil {
			continue
		}
		tag := sl.field.Tag
		switch sl.kind {
		case slotScalar:
			s.Scalars[tag] = *v
		case slotAnomalyCol:
			anomaly(&s, tag)[sl.key] = *v
		case slotAnomalyRest:
			rest := map[string]string{}
			if err := json.Unmarshal([]byte(*v), &rest); err != nil {
				return flight.State{}, fmt.Errorf("flight %d %s attributes: %w", flid, tag, err)
			}
			a := anomaly(&s, tag)
			for k, val := range rest {
				a[k] = val
			}
		case slotRecord:
			var items []flight.Item
			if err := json.Unmarshal([]byte(*v), &items); err != nil {
				return flight.State{}, fmt.Errorf("flight %d %s: %w", flid, tag, err)
			}
			s.Lists[tag] = items
		}
	}
	return s, nil
}

func anomaly(s *flight.State, tag string) flight.Item {
	a, ok := s.Anomalies[tag]
	if !ok {
		a = flight.Item{}
		s.Anomalies[tag] = a
	}
	return a
}

// childSelect reads one child table; %s is the flid predicate.
func childSelect(c childTable) string {
	kind := "NULL::text"
	if c.routeKind {
		kind = "route_kind"
	}
	cols := []string{"flid", kind, "source_seq"}
	for _, k := range c.itemColumns {
		cols = append(cols, strings.ToLower(k))
	}
	if c.textColumn != "" {
		cols = append(cols, c.textColumn)
	}
	cols = append(cols, "attrs::text")
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + c.name + " WHERE %s ORDER BY flid, " +
		map[bool]string{true: "route_kind, ", false: ""}[c.routeKind] + "ordinal"
}

// fieldFor returns the collection a child row belongs to.
func (c childTable) fieldFor(routeKind *string) (flight.FieldSpec, error) {
	if !c.routeKind {
		return c.fields[0], nil
	}
	for _, f := range c.fields {
		if routeKind != nil && f.RouteKind == *routeKind {
			return f, nil
		}
	}
	return flight.FieldSpec{}, fmt.Errorf("%s: unknown route_kind %v", c.name, routeKind)
}

// loadStates runs the main and child queries restricted by predicate (with
// args) in one round trip and returns the states in FLID order.
func loadStates(ctx context.Context, q querier, predicate string, args ...any) ([]flight.State, error) {
	batch := &pgx.Batch{}
	queueLoad(batch, predicate, args...)
	br := q.SendBatch(ctx, batch)
	defer func() { _ = br.Close() }()
	return readLoad(br)
}

// queueLoad adds the main and child queries of a load to b.
func queueLoad(b *pgx.Batch, predicate string, args ...any) {
	b.Queue(fmt.Sprintf(mainSelect, predicate), args...)
	childPredicate := "flid IN (SELECT flid FROM flight_schd WHERE " + predicate + ")"
	for _, c := range childTables {
		b.Queue(fmt.Sprintf(childSelect(c), childPredicate), args...)
	}
}

// queueLoadFLIDs is queueLoad for a list of FLIDs ($1, bigint[]): the
// children are looked up by the same list, since a child row never exists
// without its main row.
func queueLoadFLIDs(b *pgx.Batch, ids []int64) {
	b.Queue(mainByFLIDs, ids)
	for _, q := range childByFLIDs {
		b.Queue(q, ids)
	}
}

var (
	mainByFLIDs  = fmt.Sprintf(mainSelect, "flid = ANY($1)")
	childByFLIDs = func() []string {
		out := make([]string, len(childTables))
		for i, c := range childTables {
			out[i] = fmt.Sprintf(childSelect(c), "flid = ANY($1)")
		}
		return out
	}()
)

// readLoad reads the results queueLoad asked for, in order.
func readLoad(br pgx.BatchResults) ([]flight.State, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("read flights: %w", err)
	}
	var states []flight.State
	index := map[flight.FLID]int{}
	for rows.Next() {
		s, err := scanMain(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		index[s.FLID] = len(states)
		states = append(states, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read flights: %w", err)
	}
	for _, c := range childTables {
		if err := readChildren(br, c, states, index); err != nil {
			return nil, err
		}
	}
	return states, nil
}

func readChildren(br pgx.BatchResults, c childTable, states []flight.State, index map[flight.FLID]int) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("read %s: %w", c.name, err)
	}
	defer rows.Close()
	width := len(c.itemColumns)
	if c.textColumn != "" {
		width++
	}
	for rows.Next() {
		var (
			flid  int64
			kind  *string
			seq   *string
			attrs string
		)
		cols := make([]*string, width)
		dest := []any{&flid, &kind, &seq}
		for i := range cols {
			dest = append(dest, &cols[i])
		}
		dest = append(dest, &attrs)
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("scan %s: %w", c.name, err)
		}
		f, err := c.fieldFor(kind)
		if err != nil {
			return err
		}
		it, err := joinItem(cols, f.SeqAttr, seq, c.itemColumns, c.textColumn, []byte(attrs))
		if err != nil {
			return fmt.Errorf("%s row of flight %d: %w", c.name, flid, err)
		}
		i, ok := index[flight.FLID(flid)] //nolint:gosec // checked column
		if !ok {
			// The child predicate and the main rows come from one snapshot
			// of the transaction, so this is a broken invariant, not a race.
			return fmt.Errorf("%s row of flight %d without its main row", c.name, flid)
		}
		states[i].Lists[f.Tag] = append(states[i].Lists[f.Tag], it)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", c.name, err)
	}
	return nil
}

// querier is what loads and writes need: a transaction or a connection.
type querier interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}
