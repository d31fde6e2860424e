package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// mainRowUpdateWAL runs sql (an update of flight_schd) in a transaction of
// its own and returns the WAL records it wrote for flight_schd's heap by
// record type (HOT_UPDATE, UPDATE, LOCK...) and its HOT update count.
func mainRowUpdateWAL(t *testing.T, conn *pgx.Conn, sql string) (map[string]int, int64) {
	t.Helper()
	ctx := context.Background()
	var start string
	if err := conn.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&start); err != nil {
		t.Fatal(err)
	}
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
	// Only this database's blocks of flight_schd's heap (other tests
	// write WAL beside this one).
	rows, err := conn.Query(ctx, `
		SELECT record_type, count(*)
		FROM pg_get_wal_records_info($1::pg_lsn, pg_current_wal_flush_lsn())
		WHERE block_ref LIKE '%rel ' || (SELECT dattablespace FROM pg_database WHERE datname = current_database())
			|| '/' || (SELECT oid FROM pg_database WHERE datname = current_database())
			|| '/' || pg_relation_filenode('flight_schd') || ' fork main %'
		GROUP BY 1`, start)
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
	return out, hot
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
	dsn := pgtest.New(t)
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
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
