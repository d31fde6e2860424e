package store_test

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// listStatements records every statement the store sends with a list of
// ids (a []int64 argument), with the arguments of its longest call.
type listStatements struct {
	mu   sync.Mutex
	args map[string][]any
}

func (l *listStatements) note(sql string, args []any) {
	longest := listLen(args)
	if longest < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.args[sql]; ok && listLen(prev) >= longest {
		return
	}
	l.args[sql] = args
}

// listLen is the length of the longest []int64 in args, -1 when none is.
func listLen(args []any) int {
	n := -1
	for _, a := range args {
		if ids, ok := a.([]int64); ok {
			n = max(n, len(ids))
		}
	}
	return n
}

func (l *listStatements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.note(d.SQL, d.Args)
	return ctx
}
func (l *listStatements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *listStatements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (l *listStatements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.note(d.SQL, d.Args)
}
func (l *listStatements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// listFilter is a plan node that compares each row with each element of
// a parameter array: "Filter: (flid = ANY ($1))", "<> ALL ($2)".
var listFilter = regexp.MustCompile(`Filter: .*(= ANY|<> ALL) \(\$\d`)

// TestListStatementsStayLinear runs every statement the store sends with a
// list of ids — flight loads, child and flight deletes, a day's roster
// replace, outbox failures and cursor, backfill clearing — under the generic plan a
// prepared statement settles on, on tables small enough for sequential
// scans, and fails when a plan filters rows with "= ANY($n)" or
// "<> ALL($n)": with a parameter array PostgreSQL compares every row with
// every element, so such a statement costs the table times the list.
func TestListStatementsStayLinear(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &listStatements{args: map[string][]any{}}
	db := storetest.New(t, store.Options{Location: shanghai, Tracer: rec})
	f := &fixture{t: t, store: db.Store, conn: db.Conn, epoch: db.Epoch}

	const day, n = "2026-09-09", 300
	var first, second []store.SnapshotRecord
	for i := range n {
		first = append(first, storetest.FullRecord(flight.FLID(1000+i), day, i, "A1", false))
		if i >= 50 {
			second = append(second, storetest.FullRecord(flight.FLID(1000+i), day, i, "B2", false))
		}
	}
	f.mustSnapshot(day, first...)
	f.mustSnapshot(day, second...) // roster replace, 50 leave, the rest change gate
	var changes []flight.Commands
	for i := 50; i < n; i++ {
		changes = append(changes, flight.Commands{FLID: flight.FLID(1000 + i), Cmds: []flight.Command{
			{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"GATE": "C3"}}}}})
	}
	if _, err := f.increment("GATE", changes...); err != nil {
		t.Fatal(err)
	}
	if _, err := f.fdel(1060, 1061, 1062); err != nil {
		t.Fatal(err)
	}
	events, err := f.store.PendingEvents(ctx, 5000)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	errs := make([]string, len(ids))
	if err := f.store.MarkFailed(ctx, f.epoch, ids, errs); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.AdvanceCursor(ctx, f.epoch, store.Advance{To: ids[len(ids)-1], Delivered: events}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.BackfillDone(ctx, ids); err != nil {
		t.Fatal(err)
	}

	cfg, err := pgx.ParseConfig(db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	var plans []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.Contains(n.Message, "plan:") {
			plans = append(plans, n.Message)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	for _, set := range []string{
		"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0", "SET auto_explain.log_level = notice",
		"SET client_min_messages = notice", "SET plan_cache_mode = force_generic_plan",
	} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Fatalf("%s: %v", set, err)
		}
	}
	var sqls []string
	for sql := range rec.args {
		sqls = append(sqls, sql)
	}
	sort.Strings(sqls)
	// Loads, deletes, roster replace, outbox and backfill statements.
	want := map[string]bool{"FROM flight_schd WHERE": false, "DELETE FROM flight_gate": false,
		"DELETE FROM schd_gen_flid WHERE operation_day": false, "UPDATE msg_event e SET attempts": false, "DELETE FROM msg_event_parked": false, "DELETE FROM backfill_todo": false,
		// A replaced collection: its surplus rows' delete and the update in place.
		"DELETE FROM flight_gate AS c USING unnest": false, "MERGE INTO flight_gate AS c": false}
	for _, sql := range sqls {
		if strings.HasPrefix(strings.TrimSpace(sql), "INSERT") {
			continue // writes new rows: no list filter to plan
		}
		for k := range want {
			if strings.Contains(sql, k) {
				want[k] = true
			}
		}
		plans = plans[:0]
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, sql, rec.args[sql]...)
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Logf("not planned (%v): %.80s", err, sql)
			continue
		}
		for _, p := range plans {
			if m := listFilter.FindString(p); m != "" {
				t.Errorf("a list of %d ids is compared with every row (%s):\n%s\nplan:%s", listLen(rec.args[sql]), m, sql, p)
			}
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no statement with a list of ids matched %q: the test no longer sees it", k)
		}
	}
}

// TestReplacedCollectionProbesThePrimaryKey: the update in place of a
// replaced collection's rows and the delete of its surplus find each row
// by its key (flid, ordinal) in the child table's primary key, under the
// generic plan a prepared statement settles on, on a day's worth of rows
// (10,000 flights with three gates each): not a scan of the table per
// batch, and reading its rows once.
func TestReplacedCollectionProbesThePrimaryKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t, store.Options{Location: shanghai})
	conn := db.Conn
	for _, sql := range []string{
		`INSERT INTO flight_schd (flid, state_version, last_message_id) SELECT g, 1, 1 FROM generate_series(1, 10000) g`,
		`INSERT INTO flight_gate (flid, ordinal, gate, record_version) SELECT g, o, 'G' || o, 1 FROM generate_series(1, 10000) g, generate_series(1, 3) o`,
		`ANALYZE flight_schd`, `ANALYZE flight_gate`, `SET plan_cache_mode = force_generic_plan`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	upsert, surplus := store.ChildReplaceSQL("flight_gate")
	for name, c := range map[string]struct {
		sql  string
		args string
	}{
		"update in place": {upsert, `('{1,2}', '{1,1}', '{s,s}', '{A,B}', '{a,b}', '{c,d}', '{e,f}', '{g,h}', '{i,j}', '{"{}","{}"}', '{2,2}')`},
		"surplus delete":  {surplus, `('{1,2}', '{1,1}')`},
	} {
		if _, err := conn.Exec(ctx, "PREPARE p AS "+c.sql); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var lines []string
		rows, err := conn.Query(ctx, "EXPLAIN EXECUTE p"+c.args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, l)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := conn.Exec(ctx, "DEALLOCATE p"); err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "Index Scan using flight_gate_pkey on flight_gate") || strings.Contains(plan, "Seq Scan on flight_gate") {
			t.Errorf("%s does not probe flight_gate_pkey:\n%s", name, plan)
		}
		// The rows are joined with the table once, by one MERGE: an
		// update in a CTE whose RETURNING an insert anti-joined
		// materialised the rows and the updated keys again (CTE Scan
		// nodes), a tenth to a third more backend CPU.
		if strings.Contains(plan, "CTE Scan") {
			t.Errorf("%s reads its rows more than once:\n%s", name, plan)
		}
	}
}
