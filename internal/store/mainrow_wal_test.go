package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// mainRowUpdateWAL runs sql (an update of flight_schd) in a transaction of
// its own and returns the WAL records it wrote for flight_schd's heap by
// record type (HOT_UPDATE, UPDATE, LOCK...) and its HOT update count.
func mainRowUpdateWAL(t *testing.T, conn *pgx.Conn, sql string) (map[string]int, int64) {
	t.Helper()
	ctx := context.Background()
	start := walLSN(t, conn)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The view shows the session's counts not yet flushed, which may
	// include earlier transactions': take the difference.
	hotUpdates := func() int64 {
		var n int64
		if err := tx.QueryRow(ctx, `SELECT n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = 'flight_schd'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := hotUpdates()
	if _, err := tx.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	hot := hotUpdates() - before
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return walSince(t, conn, start, "flight_schd"), hot
}

// walLSN is the server's WAL insert position.
func walLSN(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var lsn string
	if err := conn.QueryRow(context.Background(), `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	return lsn
}

// walSince counts the WAL records written since start (and flushed) for
// the main fork of relation rel (a table or an index) of conn's
// database, by record type. Other tests write WAL beside this one: only
// this database's blocks count.
func walSince(t *testing.T, conn *pgx.Conn, start, rel string) map[string]int {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		SELECT record_type, count(*)
		FROM pg_get_wal_records_info($1::pg_lsn, pg_current_wal_flush_lsn())
		WHERE block_ref LIKE '%rel ' || (SELECT dattablespace FROM pg_database WHERE datname = current_database())
			|| '/' || (SELECT oid FROM pg_database WHERE datname = current_database())
			|| '/' || pg_relation_filenode($2) || ' fork main %'
		GROUP BY 1`, start, rel)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for rows.Next() {
		var kind string
		var n int
		if err := rows.Scan(&kind, &n); err != nil {
			t.Fatal(err)
		}
		out[kind] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMainRowUpdateIsHOTAndLocksNothing: a live event rewrites its
// flight's main row; since 00029 that is one HOT_UPDATE record and nothing
// else, also when it moves a typed SIS time (SODT, CNCL, NAAT, NEAT). A
// BEFORE UPDATE row trigger made PostgreSQL lock every row before updating
// it (a LOCK record per row, even with a WHEN clause that never called
// it), and indexes on the typed times that no read used turned every
// change of one of those times into an update of every index. 00029 down
// brings both back.
func TestMainRowUpdateIsHOTAndLocksNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, dsn := migratedAt(t)
	exec(t, conn, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`)
	day := time.Date(2026, 9, 9, 0, 0, 0, 0, time.UTC)
	const flights = 20
	for f := int64(1); f <= flights; f++ {
		insertFlight(t, conn, f, day, f)
	}
	exec(t, conn, `UPDATE flight_schd SET state_version = state_version + 1, sodt_utc = $1, cncl_utc = $1, naat_utc = $1, neat_utc = $1`, day)
	exec(t, conn, `VACUUM flight_schd`) // room on the page for the updates below, as a live table has

	step := 0
	update := func() string {
		step++
		return fmt.Sprintf(`UPDATE flight_schd SET state_version = state_version + 100, updated_at = now(), estt = 'x%d',
			sodt_utc = sodt_utc + interval '1 minute', cncl_utc = cncl_utc + interval '1 minute',
			naat_utc = naat_utc + interval '1 minute', neat_utc = neat_utc + interval '1 minute'`, step)
	}

	records, hot := mainRowUpdateWAL(t, conn, update())
	if records["LOCK"] != 0 || records["UPDATE"] != 0 || records["HOT_UPDATE"] != flights || hot != flights {
		t.Errorf("update of %d main rows wrote %v with %d HOT updates, want %d HOT_UPDATE records and no LOCK or UPDATE",
			flights, records, hot, flights)
	}

	if _, err := store.MigrateDownTo(ctx, dsn, 28); err != nil {
		t.Fatalf("down to 28: %v", err)
	}
	exec(t, conn, `VACUUM flight_schd`)
	records, hot = mainRowUpdateWAL(t, conn, update())
	if records["LOCK"] < flights || hot != 0 {
		t.Errorf("after down: update of %d main rows wrote %v with %d HOT updates, want a LOCK record per row and no HOT update",
			flights, records, hot)
	}
}

// TestReplacedCollectionKeepsItsRowsInPlace: a FLOP that replaces a
// collection of a flight that exists (GTDT here) updates the rows at the
// ordinals the flight keeps, deletes only those past the new length and
// inserts only those past the old one. Deleting every row and inserting
// the new list wrote three records for each kept ordinal (delete, insert,
// index entry) where an update in place writes one.
func TestReplacedCollectionKeepsItsRowsInPlace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	exec(t, f.conn, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`)
	const ca100 = 121112312
	gates := func(names ...string) flight.Commands {
		items := make([]flight.Item, len(names))
		for i, n := range names {
			items[i] = flight.Item{"GTNO": strconv.Itoa(i + 1), "GATE": n}
		}
		return flight.Commands{FLID: ca100, Cmds: []flight.Command{{Tag: "GTDT", Op: flight.OpReplace, Items: items}}}
	}
	f.mustSnapshot(day9, rec(ca100, "CA100", day9,
		flight.Command{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"GTNO": "1", "GATE": "G1"}, {"GTNO": "2", "GATE": "G2"}, {"GTNO": "3", "GATE": "G3"}}},
		flight.Command{Tag: "DELY", Op: flight.OpReplace, Items: []flight.Item{{"CODE": "81", "DURA": "20"}}},
	))
	type want struct {
		Gates                    string
		Updates, Deletes, Insert int
		IndexEntries             int
	}
	for _, step := range []struct {
		gates []string
		want  want
	}{
		{[]string{"A1", "A2", "A3"}, want{Gates: "1 A1,2 A2,3 A3", Updates: 3}},
		{[]string{"B1"}, want{Gates: "1 B1", Updates: 1, Deletes: 2}},
		{[]string{"C1", "C2", "C3", "C4"}, want{Gates: "1 C1,2 C2,3 C3,4 C4", Updates: 1, Insert: 3, IndexEntries: 3}},
	} {
		start := walLSN(t, f.conn)
		out, err := f.increment("GTDT", gates(step.gates...))
		if err != nil {
			t.Fatal(err)
		}
		heap, index := walSince(t, f.conn, start, "flight_gate"), walSince(t, f.conn, start, "flight_gate_pkey")
		var got want
		var rows []string
		r, err := f.conn.Query(t.Context(), `SELECT ordinal, gate, record_version FROM flight_gate WHERE flid = $1 ORDER BY ordinal`, ca100)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var ord int32
			var gate string
			var version int64
			if err := r.Scan(&ord, &gate, &version); err != nil {
				t.Fatal(err)
			}
			if version != out.Versions[ca100] {
				t.Errorf("%v: gate %d has version %d, want %d", step.gates, ord, version, out.Versions[ca100])
			}
			rows = append(rows, strconv.Itoa(int(ord))+" "+gate)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		got.Gates = strings.Join(rows, ",")
		got.Updates, got.Deletes, got.Insert = heap["HOT_UPDATE"]+heap["UPDATE"], heap["DELETE"], heap["INSERT"]+heap["INSERT+INIT"]
		got.IndexEntries = index["INSERT_LEAF"] + heap["UPDATE"]
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("GTDT %v (-want +got; heap %v, index %v):\n%s", step.gates, heap, index, diff)
		}
	}
	if n := f.count(`SELECT count(*) FROM flight_delay WHERE flid = $1`, ca100); n != 1 {
		t.Errorf("DELY rows %d, want 1 (untouched)", n)
	}
}

// TestReplacedCollectionIsHOTOnAFullDay: a full-day snapshot's COPY fills
// the child tables' pages; since 00029 it leaves a tenth of each free, so
// a later GTDT updates its flight's gate rows on their page (HOT: one
// record a row, no index entry) instead of moving them to another page
// (an update, a lock of the old row and an index entry a row). The room
// holds about a dozen new versions of these rows (until the page is
// pruned): three flights' nine here.
func TestReplacedCollectionIsHOTOnAFullDay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	exec(t, f.conn, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`)
	three := func(prefix string) flight.Command {
		return flight.Command{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{
			{"GTNO": "1", "GATE": prefix + "1"}, {"GTNO": "2", "GATE": prefix + "2"}, {"GTNO": "3", "GATE": prefix + "3"}}}
	}
	var day []store.SnapshotRecord
	for i := range 300 {
		flid := flight.FLID(1000 + i)
		day = append(day, rec(flid, "CA"+strconv.Itoa(i), day9, three("G")))
	}
	f.mustSnapshot(day9, day...)
	// The first page's flights, as the snapshot wrote them.
	var flids []int64
	r, err := f.conn.Query(t.Context(), `SELECT DISTINCT flid FROM flight_gate WHERE (ctid::text::point)[0] = 0 ORDER BY flid LIMIT 3`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id int64
		if err := r.Scan(&id); err != nil {
			t.Fatal(err)
		}
		flids = append(flids, id)
	}
	if err := r.Err(); err != nil || len(flids) != 3 {
		t.Fatalf("first page's flights %v: %v", flids, err)
	}
	start := walLSN(t, f.conn)
	var cmds []flight.Commands
	for _, id := range flids {
		cmds = append(cmds, flight.Commands{FLID: flight.FLID(id), Cmds: []flight.Command{three("H")}})
	}
	if _, err := f.increment("GTDT", cmds...); err != nil {
		t.Fatal(err)
	}
	heap, index := walSince(t, f.conn, start, "flight_gate"), walSince(t, f.conn, start, "flight_gate_pkey")
	if heap["HOT_UPDATE"] != 3*len(flids) || heap["UPDATE"] != 0 || heap["LOCK"] != 0 || index["INSERT_LEAF"] != 0 {
		t.Errorf("GTDT of %d flights on a full page wrote heap %v, index %v; want %d HOT_UPDATE records alone",
			len(flids), heap, index, 3*len(flids))
	}
}
