package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// flidIn is the predicate "flid is one of $1 (bigint[])", written as a
// semi-join over unnest. The plain "flid = ANY($1)" is hashed only when the
// array is a constant: under the generic plan a prepared statement gets
// after five runs, a table small enough for a sequential scan compared
// every row with every element of the list (a batch's first load after a
// RESP: 2,000 rows × 600 FLIDs per table, 25–60 ms a statement), and a
// list of thousands multiplies that. As a semi-join the cost stays linear:
// a hash of the list, or one index probe per element.
// Every statement that takes a list of ids uses this shape (NOT IN for the
// complement: a hashed subplan).
const flidIn = "flid IN (SELECT unnest($1::bigint[]))"

// mainSelect reads main rows; %s is the WHERE clause.
var mainSelect = "SELECT flid, operation_day::text, state_version, last_message_id, updated_at, " +
	columnList(readSlots) + " FROM flight_schd WHERE %s ORDER BY flid"

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
	// Sized for every column: grown from the five fixed ones it was
	// reallocated four times a row.
	dest := make([]any, 0, 5+len(vals))
	dest = append(dest, &flid, &day, &version, &lastMsg, &updated)
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

// loadPage reads the first limit main rows predicate selects (args are
// $1…) and then, in one batch, every child table for just those FLIDs:
// the page's rows and no others leave the database. Inside one
// REPEATABLE READ transaction both statements see the same snapshot.
func loadPage(ctx context.Context, q pageQuerier, predicate string, limit int, args ...any) ([]flight.State, error) {
	args = append(args[:len(args):len(args)], limit)
	rows, err := q.Query(ctx, fmt.Sprintf(mainSelect, predicate)+fmt.Sprintf(" LIMIT $%d", len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("read flights: %w", err)
	}
	states, index, err := scanMains(rows)
	if err != nil {
		return nil, err
	}
	if len(states) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(states))
	for i, s := range states {
		ids[i] = int64(s.FLID) //nolint:gosec // at most 12 digits
	}
	batch := &pgx.Batch{}
	for _, c := range childByFLIDs {
		batch.Queue(c, ids)
	}
	br := q.SendBatch(ctx, batch)
	defer func() { _ = br.Close() }()
	for _, c := range childTables {
		if err := readChildren(br, c, states, index); err != nil {
			return nil, err
		}
	}
	return states, nil
}

// pageQuerier is what loadPage needs: a transaction.
type pageQuerier interface {
	querier
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
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
	mainByFLIDs  = fmt.Sprintf(mainSelect, flidIn)
	childByFLIDs = func() []string {
		out := make([]string, len(childTables))
		for i, c := range childTables {
			out[i] = fmt.Sprintf(childSelect(c), flidIn)
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
	states, index, err := scanMains(rows)
	if err != nil {
		return nil, err
	}
	for _, c := range childTables {
		if err := readChildren(br, c, states, index); err != nil {
			return nil, err
		}
	}
	return states, nil
}

// scanMains reads main rows into states, with each FLID's index; it
// closes rows.
func scanMains(rows pgx.Rows) ([]flight.State, map[flight.FLID]int, error) {
	defer rows.Close()
	var states []flight.State
	index := map[flight.FLID]int{}
	for rows.Next() {
		s, err := scanMain(rows)
		if err != nil {
			return nil, nil, err
		}
		index[s.FLID] = len(states)
		states = append(states, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read flights: %w", err)
	}
	return states, index, nil
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

// loadByFLID reads the current states of flids (one round trip).
func (t *Tx) loadByFLID(ctx context.Context, flids []flight.FLID) (map[flight.FLID]flight.State, error) {
	out := make(map[flight.FLID]flight.State, len(flids))
	if len(flids) == 0 {
		return out, nil
	}
	ids := make([]int64, len(flids))
	for i, f := range flids {
		ids[i] = int64(f) //nolint:gosec // at most 12 digits
	}
	states, err := loadStates(ctx, t.tx, flidIn, ids)
	if err != nil {
		return nil, err
	}
	for _, s := range states {
		out[s.FLID] = s
	}
	return out, nil
}
