package store_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/migrations"
)

// migrated returns a connection to a fresh database with the full schema.
func migrated(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, _ := migratedAt(t)
	return conn
}

// migratedAt is migrated with the database's URL, for tests that migrate
// it down and up again.
func migratedAt(t *testing.T) (*pgx.Conn, string) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.New(t)
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn, dsn
}

func exec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// execFails asserts that sql is refused with the given SQLSTATE and returns
// the server's hint.
func execFails(t *testing.T, conn *pgx.Conn, code, sql string, args ...any) (hint string) {
	t.Helper()
	_, err := conn.Exec(context.Background(), sql, args...)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("%s: want SQLSTATE %s, got %v", sql, code, err)
	}
	if pgErr.Code != code {
		t.Fatalf("%s: want SQLSTATE %s, got %s (%s)", sql, code, pgErr.Code, pgErr.Message)
	}
	return pgErr.Hint
}

var allTables = []string{
	"flight_schd", "flight_gate", "flight_checkin", "flight_belt", "flight_stand_plan",
	"flight_chute", "flight_delay", "flight_bridge_op", "flight_chock_op", "flight_route_point",
	"schd_gen", "schd_gen_flid", "pipeline_lock", "proc_state", "msg_event", "req_track",
	"backfill_todo", "schd_snap_log", "msg_archive", "flight_history",
}

func tableCount(t *testing.T, dsn string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var n int
	if err := conn.QueryRow(ctx,
		`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name = ANY($1)`,
		allTables).Scan(&n); err != nil {
		t.Fatalf("count tables: %v", err)
	}
	return n
}

func TestMigrationsApplyUpDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.New(t)

	up, err := store.Migrate(ctx, dsn)
	if err != nil {
		t.Fatalf("first up: %v", err)
	}
	if len(up) == 0 {
		t.Fatal("first up applied no migration")
	}
	if got := tableCount(t, dsn); got != len(allTables) {
		t.Fatalf("after up: %d of %d tables exist", got, len(allTables))
	}
	current, latest, err := store.SchemaVersion(ctx, dsn)
	if err != nil || current != latest || latest == 0 {
		t.Fatalf("schema version after up: current %d latest %d err %v", current, latest, err)
	}

	again, err := store.Migrate(ctx, dsn)
	if err != nil || len(again) != 0 {
		t.Fatalf("second up must be a no-op, applied %d: %v", len(again), err)
	}

	down, err := store.MigrateDownTo(ctx, dsn, 0)
	if err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	if len(down) != len(up) {
		t.Fatalf("down rolled back %d migrations, up applied %d", len(down), len(up))
	}
	if got := tableCount(t, dsn); got != 0 {
		t.Fatalf("after down: %d tables left", got)
	}

	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatalf("up after down: %v", err)
	}
	if got := tableCount(t, dsn); got != len(allTables) {
		t.Fatalf("after re-up: %d of %d tables exist", got, len(allTables))
	}
}

func TestConcurrentMigrateRunsEachMigrationOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.New(t)
	type result struct {
		n   int
		err error
	}
	results := make(chan result, 3)
	for range 3 {
		go func() {
			r, err := store.Migrate(ctx, dsn)
			results <- result{len(r), err}
		}()
	}
	total := 0
	for range 3 {
		r := <-results
		if r.err != nil {
			t.Fatalf("concurrent migrate: %v", r.err)
		}
		total += r.n
	}
	// Counted by file, not by the newest version: numbers may leave gaps
	// (branches reserve theirs).
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	if total != len(files) {
		t.Fatalf("three replicas applied %d migrations in all, want each of %d exactly once", total, len(files))
	}
	if current, latest, err := store.SchemaVersion(ctx, dsn); err != nil || current != latest {
		t.Fatalf("schema version after the replicas: current %d latest %d err %v", current, latest, err)
	}
}

func insertFlight(t *testing.T, conn *pgx.Conn, flid int64, day any, version int64) {
	t.Helper()
	exec(t, conn, `INSERT INTO flight_schd (flid, operation_day, state_version, last_message_id) VALUES ($1, $2, $3, 1)`,
		flid, day, version)
}

func TestOperationDayIsSetOnce(t *testing.T) {
	t.Parallel()
	conn := migrated(t)
	day := time.Date(2026, 9, 9, 0, 0, 0, 0, time.UTC)

	// NULL until a full-day snapshot includes the flight: then set once.
	insertFlight(t, conn, 121112312, nil, 1)
	exec(t, conn, `UPDATE flight_schd SET operation_day = $1, state_version = 2 WHERE flid = 121112312`, day)
	// Setting the same day again is not a change.
	exec(t, conn, `UPDATE flight_schd SET operation_day = $1, state_version = 3 WHERE flid = 121112312`, day)

	hint := execFails(t, conn, "FF001", `UPDATE flight_schd SET operation_day = $1, state_version = 4 WHERE flid = 121112312`, day.AddDate(0, 0, 1))
	if hint != "SAME_FLID_ACROSS_OPERATION_DAYS" {
		t.Errorf("hint = %q, want SAME_FLID_ACROSS_OPERATION_DAYS", hint)
	}
	_ = execFails(t, conn, "FF001", `UPDATE flight_schd SET operation_day = NULL, state_version = 4 WHERE flid = 121112312`)

	var got time.Time
	if err := conn.QueryRow(context.Background(), `SELECT operation_day FROM flight_schd WHERE flid = 121112312`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(day) {
		t.Fatalf("operation_day = %s after refused changes, want %s", got, day)
	}
}

func TestStateVersionOnlyRises(t *testing.T) {
	t.Parallel()
	conn := migrated(t)
	insertFlight(t, conn, 7, nil, 5)
	_ = execFails(t, conn, "FF003", `UPDATE flight_schd SET state_version = 5, flno = 'CA100' WHERE flid = 7`)
	_ = execFails(t, conn, "FF003", `UPDATE flight_schd SET state_version = 4 WHERE flid = 7`)
	exec(t, conn, `UPDATE flight_schd SET state_version = nextval('state_version_seq') + 5, flno = 'CA100' WHERE flid = 7`)
	_ = execFails(t, conn, "FF002", `UPDATE flight_schd SET flid = 8, state_version = 100 WHERE flid = 7`)
}

func TestFLIDIsNumericWithAtMostTwelveDigits(t *testing.T) {
	t.Parallel()
	conn := migrated(t)
	insertFlight(t, conn, 999999999999, nil, 1)
	insertFlight(t, conn, 0, nil, 1)
	_ = execFails(t, conn, "23514", `INSERT INTO flight_schd (flid, state_version, last_message_id) VALUES (1000000000000, 1, 1)`)
	_ = execFails(t, conn, "23514", `INSERT INTO flight_schd (flid, state_version, last_message_id) VALUES (-1, 1, 1)`)
	_ = execFails(t, conn, "22P02", `INSERT INTO flight_schd (flid, state_version, last_message_id) VALUES ('12A', 1, 1)`)
	_ = execFails(t, conn, "23514", `INSERT INTO schd_gen_flid (operation_day, flid) VALUES ('2026-09-09', 1000000000000)`)
}

func TestRouteTableKeepsROUTAndERUTApart(t *testing.T) {
	t.Parallel()
	conn := migrated(t)
	insertFlight(t, conn, 42, nil, 1)
	const ins = `INSERT INTO flight_route_point (flid, route_kind, ordinal, source_seq, apcd, record_version) VALUES (42, $1, $2, $3, $4, 1)`
	exec(t, conn, ins, "ROUT", 1, "1", "PEK")
	exec(t, conn, ins, "ERUT", 1, "1", "SHA")
	exec(t, conn, ins, "ROUT", 2, "2", "CAN")
	_ = execFails(t, conn, "23505", ins, "ROUT", 1, "1", "HKG")
	_ = execFails(t, conn, "23514", ins, "XRUT", 1, "1", "HKG")

	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM flight_route_point WHERE flid = 42 AND ordinal = 1`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("ROUT and ERUT at ordinal 1: %d rows, want 2", n)
	}
}

func TestCollectionRowsNeedTheirFlight(t *testing.T) {
	t.Parallel()
	conn := migrated(t)
	for _, table := range []string{"flight_gate", "flight_checkin", "flight_belt", "flight_stand_plan",
		"flight_chute", "flight_delay", "flight_bridge_op", "flight_chock_op"} {
		execFails(t, conn, "23503", `INSERT INTO `+table+` (flid, ordinal, record_version) VALUES (5, 1, 1)`)
	}
	_ = execFails(t, conn, "23503", `INSERT INTO flight_route_point (flid, route_kind, ordinal, record_version) VALUES (5, 'ROUT', 1, 1)`)

	// A flight with children cannot be deleted before them: deletes are
	// explicit, never a silent cascade.
	insertFlight(t, conn, 5, nil, 1)
	exec(t, conn, `INSERT INTO flight_gate (flid, ordinal, source_seq, gate, record_version) VALUES (5, 1, '1', 'A1', 1)`)
	_ = execFails(t, conn, "23503", `DELETE FROM flight_schd WHERE flid = 5`)

	// The check covers every row of a statement: one row without its
	// flight fails the whole insert, and a row cannot be moved to one.
	_ = execFails(t, conn, "23503", `INSERT INTO flight_gate (flid, ordinal, record_version) VALUES (5, 2, 1), (6, 1, 1)`)
	_ = execFails(t, conn, "23503", `UPDATE flight_gate SET flid = 6 WHERE flid = 5`)
	_ = execFails(t, conn, "23503", `TRUNCATE flight_schd`)
	// COPY (how a large snapshot writes collection rows) is checked too.
	_, err := conn.CopyFrom(context.Background(), pgx.Identifier{"flight_gate"}, []string{"flid", "ordinal", "record_version"},
		pgx.CopyFromRows([][]any{{int64(5), int32(3), int64(1)}, {int64(8), int32(1), int64(1)}}))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23503" {
		t.Fatalf("COPY of a row without its flight: want SQLSTATE 23503, got %v", err)
	}
	var gates int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM flight_gate`).Scan(&gates); err != nil {
		t.Fatal(err)
	}
	if gates != 1 {
		t.Fatalf("flight_gate holds %d rows after the refused statements, want 1", gates)
	}

	// Children first, then the flight: the order the store deletes in.
	exec(t, conn, `DELETE FROM flight_gate WHERE flid = 5`)
	exec(t, conn, `DELETE FROM flight_schd WHERE flid = 5`)
	insertFlight(t, conn, 7, nil, 1)
	exec(t, conn, `INSERT INTO flight_belt (flid, ordinal, record_version) VALUES (7, 1, 1)`)
	exec(t, conn, `TRUNCATE flight_belt, flight_schd`)
}

// TestCollectionUpdateInPlaceLooksNoMainRowUp: an update that keeps a
// collection row's flid (the store's update in place of a replaced
// collection) does not look the flight's main row up again, since 00030:
// the row had it and keeps it. Before, every updated row went through a
// transition table into a lookup of flight_schd, about a seventh of such
// a write's backend CPU. Moving a row to a flight without one is still refused
// (TestCollectionRowsNeedTheirFlight); 00030 down brings the lookup back.
func TestCollectionUpdateInPlaceLooksNoMainRowUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, dsn := migratedAt(t)
	insertFlight(t, conn, 5, nil, 1)
	exec(t, conn, `INSERT INTO flight_gate (flid, ordinal, gate, record_version) VALUES (5, 1, 'A1', 1), (5, 2, 'A2', 1)`)
	upsert, _ := store.ChildReplaceSQL("flight_gate")
	exec(t, conn, "PREPARE upsert AS "+upsert)
	// lookups runs an update in place of both gate rows and returns how
	// many scans of flight_schd the transaction made.
	lookups := func() int64 {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		scans := func() int64 {
			var n int64
			if err := tx.QueryRow(ctx, `SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0)::bigint
				FROM pg_stat_xact_user_tables WHERE relname = 'flight_schd'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := scans()
		for _, sql := range []string{
			`UPDATE flight_gate SET gate = 'B' || ordinal WHERE flid = 5`,
			`EXECUTE upsert('{5,5}', '{1,2}', '{1,2}', '{C1,C2}', NULL, NULL, NULL, NULL, NULL, '{"{}","{}"}', '{2,2}')`,
		} {
			tag, err := tx.Exec(ctx, sql)
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			if tag.RowsAffected() != 2 {
				t.Fatalf("%s: %d rows, want 2", sql, tag.RowsAffected())
			}
		}
		return scans() - before
	}
	if n := lookups(); n != 0 {
		t.Errorf("updates in place of collection rows scanned flight_schd %d times, want none", n)
	}

	exec(t, conn, "DEALLOCATE upsert")
	if _, err := store.MigrateDownTo(ctx, dsn, 29); err != nil {
		t.Fatalf("down to 29: %v", err)
	}
	exec(t, conn, "PREPARE upsert AS "+upsert)
	if n := lookups(); n == 0 {
		t.Error("after 00030 down, updates of collection rows no longer look their flight up")
	}
	_ = execFails(t, conn, "23503", `UPDATE flight_gate SET flid = 6 WHERE flid = 5`)
	exec(t, conn, "DEALLOCATE upsert")
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatalf("up again: %v", err)
	}
	_ = execFails(t, conn, "23503", `UPDATE flight_gate SET flid = 6 WHERE flid = 5`)
}

func TestRosterRowsAreUniqueAndBelongToOneDay(t *testing.T) {
	t.Parallel()
	conn := migrated(t)
	exec(t, conn, `INSERT INTO schd_gen (operation_day, version, last_message_id, last_recv_at) VALUES ('2026-09-09', 1, 10, now()), ('2026-09-10', 1, 11, now())`)
	exec(t, conn, `INSERT INTO schd_gen_flid (operation_day, flid) VALUES ('2026-09-09', 1), ('2026-09-09', 2)`)
	_ = execFails(t, conn, "23505", `INSERT INTO schd_gen_flid (operation_day, flid) VALUES ('2026-09-09', 1)`)
	_ = execFails(t, conn, "23505", `INSERT INTO schd_gen_flid (operation_day, flid) VALUES ('2026-09-10', 2)`)
	_ = execFails(t, conn, "23503", `INSERT INTO schd_gen_flid (operation_day, flid) VALUES ('2026-09-11', 3)`)

	// Removing a day's ledger removes its roster with it.
	exec(t, conn, `DELETE FROM schd_gen WHERE operation_day = '2026-09-09'`)
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM schd_gen_flid`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("roster rows left after deleting the day: %d", n)
	}

	// Checked once per statement (not a foreign key since 00028), with
	// the same outcomes: a row of a day without a ledger row fails,
	// whether inserted beside rows of a day that has one or moved there;
	// a day's ledger row cannot change its day or be truncated away while
	// its roster stays.
	exec(t, conn, `INSERT INTO schd_gen_flid (operation_day, flid) VALUES ('2026-09-10', 4), ('2026-09-10', 5)`)
	_ = execFails(t, conn, "23503", `INSERT INTO schd_gen_flid (operation_day, flid) VALUES ('2026-09-10', 6), ('2026-09-12', 7)`)
	_ = execFails(t, conn, "23503", `UPDATE schd_gen_flid SET operation_day = '2026-09-12' WHERE flid = 4`)
	_ = execFails(t, conn, "23503", `UPDATE schd_gen SET operation_day = '2026-09-12' WHERE operation_day = '2026-09-10'`)
	exec(t, conn, `UPDATE schd_gen SET version = 2 WHERE operation_day = '2026-09-10'`)
	_ = execFails(t, conn, "23503", `TRUNCATE schd_gen`)
	exec(t, conn, `TRUNCATE schd_gen, schd_gen_flid`)
}

func TestOneRequestPendingPerKind(t *testing.T) {
	t.Parallel()
	conn := migrated(t)
	const ins = `INSERT INTO req_track (kind, operation_day, range_start, range_end, routing_id, seqn, status)
		VALUES ('RQFD', $1, '09SEP260000', '09SEP262359', 'AODB', $2, $3)`
	exec(t, conn, ins, "2026-09-09", 1, "PENDING")
	_ = execFails(t, conn, "23505", ins, "2026-09-10", 2, "PENDING")
	exec(t, conn, `UPDATE req_track SET status = 'EXPIRED' WHERE seqn = 1`)
	exec(t, conn, ins, "2026-09-10", 2, "PENDING")
	_ = execFails(t, conn, "23514", ins, "2026-09-11", 1000000, "EXPIRED")
}

func TestPipelineLockRowExists(t *testing.T) {
	t.Parallel()
	conn := migrated(t)
	var epoch int64
	if err := conn.QueryRow(context.Background(),
		`SELECT epoch FROM pipeline_lock WHERE name = 'FLIGHT_SCHD_WRITER' FOR UPDATE`).Scan(&epoch); err != nil {
		t.Fatalf("pipeline_lock row: %v", err)
	}
	if epoch != 0 {
		t.Fatalf("initial epoch = %d, want 0", epoch)
	}
}

func TestTerminalProcessingStateCarriesFinishTime(t *testing.T) {
	t.Parallel()
	conn := migrated(t)
	exec(t, conn, `INSERT INTO proc_state (message_id, status, received_at) VALUES (1, 'PENDING', now())`)
	_ = execFails(t, conn, "23514", `INSERT INTO proc_state (message_id, status, received_at) VALUES (2, 'DEAD', now())`)
	_ = execFails(t, conn, "23514", `INSERT INTO proc_state (message_id, status, received_at) VALUES (3, 'DONE', now())`)
	exec(t, conn, `INSERT INTO proc_state (message_id, status, received_at, finished_at) VALUES (2, 'DEAD', now(), now())`)
}

// Migration 14 turns per-message backfill intents into one per batch and
// back: Up groups the rows a batch registered (they share processed_at)
// into one intent, nothing lost; Down splits them into per-message rows
// again, result and note from the processing state.
func TestBackfillIntentsCarryOverUpAndDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.New(t)
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	if _, err := store.MigrateDownTo(ctx, dsn, 13); err != nil {
		t.Fatalf("down to 13: %v", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	batch1 := time.Date(2026, 9, 9, 2, 0, 0, 0, time.UTC)
	batch2 := batch1.Add(time.Second)
	type perMessage struct {
		ID           int64
		Result, Note string
		Processed    time.Time
		Attempts     int
		LastError    string
	}
	old := []perMessage{
		{1, "SUCCEEDED", "", batch1, 2, "mailbox down"},
		{2, "DEAD", "MALFORMED_XML: x", batch1, 2, "mailbox down"},
		{3, "SKIPPED", "DUPLICATE", batch1, 2, "mailbox down"},
		{4, "DEAD", "INTERNAL: y", batch2, 0, ""},
	}
	for _, m := range old {
		exec(t, conn, `INSERT INTO proc_state (message_id, status, note, received_at, finished_at) VALUES ($1, $2, NULLIF($3, ''), $4, $4)`,
			m.ID, m.Result, m.Note, m.Processed)
		exec(t, conn, `INSERT INTO backfill_todo (message_id, result, note, processed_at, attempts, last_error) VALUES ($1, $2, NULLIF($3, ''), $4, $5, NULLIF($6, ''))`,
			m.ID, m.Result, m.Note, m.Processed, m.Attempts, m.LastError)
	}

	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatalf("up to 14 with intents: %v", err)
	}
	type perBatch struct {
		IDs       []int64
		Processed time.Time
		Attempts  int
		LastError string
	}
	rows, err := conn.Query(ctx, `SELECT message_ids, processed_at, attempts, coalesce(last_error, '') FROM backfill_todo ORDER BY batch_id`)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := pgx.CollectRows(rows, pgx.RowToStructByPos[perBatch])
	if err != nil {
		t.Fatal(err)
	}
	wantBatches := []perBatch{{[]int64{1, 2, 3}, batch1, 2, "mailbox down"}, {[]int64{4}, batch2, 0, ""}}
	if diff := cmp.Diff(wantBatches, batches, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Fatalf("intents after up (-want +got):\n%s", diff)
	}

	if _, err := store.MigrateDownTo(ctx, dsn, 13); err != nil {
		t.Fatalf("down to 13 with intents: %v", err)
	}
	rows, err = conn.Query(ctx, `SELECT message_id, result, coalesce(note, ''), processed_at, attempts, coalesce(last_error, '') FROM backfill_todo ORDER BY message_id`)
	if err != nil {
		t.Fatal(err)
	}
	back, err := pgx.CollectRows(rows, pgx.RowToStructByPos[perMessage])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(old, back, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Fatalf("per-message intents after down (-want +got):\n%s", diff)
	}
}

// Migration 17 makes the outbox append-only and back: Up sets the cursor
// below the first PENDING row (every row at or below it DELIVERED,
// SUPERSEDED or PARKED), lists the PARKED rows in msg_event_parked with
// their error, attempts and time, and keeps every row; Down rebuilds the
// statuses: the parked ones PARKED, rows at or below the cursor DELIVERED,
// the rest PENDING.
func TestOutboxCursorCarriesOverUpAndDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.New(t)
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	if _, err := store.MigrateDownTo(ctx, dsn, 16); err != nil {
		t.Fatalf("down to 16: %v", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	parkedAt := time.Date(2026, 9, 9, 2, 0, 0, 0, time.UTC)
	for i, status := range []string{"DELIVERED", "SUPERSEDED", "PARKED", "PENDING", "DELIVERED", "PENDING"} {
		var done *time.Time
		if status != "PENDING" {
			done = &parkedAt
		}
		exec(t, conn, `INSERT INTO msg_event (id, kind, event, flid, state_version, message_id, payload, status, done_at, attempts, last_error)
			VALUES ($1, 'KAFKA_SCHD', 'UPSERT', 7, $1, 1, '{}', $2, $3, $4, $5)`,
			i+1, status, done, map[bool]int{true: 3}[status == "PARKED"], map[bool]*string{true: ptr("too large")}[status == "PARKED"])
	}

	// Up to 18 only: migration 19 keys msg_event_parked by record (see
	// TestOutboxRowsCarryOverUpAndDown); the last step below goes to the
	// newest with these rows.
	if _, err := store.MigrateUpTo(ctx, dsn, 18); err != nil {
		t.Fatalf("up to 17 with rows: %v", err)
	}
	var cursor, rows int64
	if err := conn.QueryRow(ctx, `SELECT delivered_id, (SELECT count(*) FROM msg_event) FROM msg_event_cursor`).Scan(&cursor, &rows); err != nil {
		t.Fatal(err)
	}
	if cursor != 3 || rows != 6 {
		t.Fatalf("cursor %d rows %d, want 3 (below the first PENDING row) and every row kept", cursor, rows)
	}
	type parked struct {
		ID       int64
		Error    string
		Attempts int
		At       time.Time
	}
	got, err := pgx.CollectRows(must(conn.Query(ctx, `SELECT event_id, last_error, attempts, parked_at FROM msg_event_parked ORDER BY event_id`)),
		pgx.RowToStructByPos[parked])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]parked{{3, "too large", 3, parkedAt}}, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Fatalf("parked after up (-want +got):\n%s", diff)
	}
	// A row the dispatcher parks above the cursor after the migration
	// comes back PARKED too.
	exec(t, conn, `INSERT INTO msg_event_parked (event_id, last_error) VALUES (6, 'invalid record')`)

	if _, err := store.MigrateDownTo(ctx, dsn, 16); err != nil {
		t.Fatalf("down to 16 with rows: %v", err)
	}
	statuses, err := pgx.CollectRows(must(conn.Query(ctx, `SELECT status || ':' || (done_at IS NULL)::text FROM msg_event ORDER BY id`)), pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DELIVERED:false", "DELIVERED:false", "PARKED:false", "PENDING:true", "PENDING:true", "PARKED:false"}
	if diff := cmp.Diff(want, statuses); diff != "" {
		t.Fatalf("statuses after down (-want +got):\n%s", diff)
	}
	var lastErr string
	if err := conn.QueryRow(ctx, `SELECT last_error FROM msg_event WHERE id = 3`).Scan(&lastErr); err != nil || lastErr != "too large" {
		t.Fatalf("parked row's error %q %v", lastErr, err)
	}
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatalf("up again: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// oldRecord is a msg_event row as migrations 17 and 18 have it: one record.
type oldRecord struct {
	ID                 int64
	Kind, Event        string
	FLID, Version, Msg int64
	Payload            string
}

func oldRecords(t *testing.T, conn *pgx.Conn) []oldRecord {
	t.Helper()
	out, err := pgx.CollectRows(must(conn.Query(context.Background(),
		`SELECT id, kind, event, flid, state_version, message_id, payload FROM msg_event ORDER BY id`)), pgx.RowToStructByPos[oldRecord])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Migration 19 merges each state row with the notice row that follows it
// (same message, flight and version) into one row with the notice's id,
// unless the cursor lies between them (the state done, the notice
// pending: both stay, alone); re-delivered copies stay alone. Parked
// entries follow their record. Every record keeps its side of the cursor,
// so nothing done is sent again and nothing pending is lost. New rows take
// ids two apart, and Down splits every row of two records back in place
// (the state at id - 1): the old rows come back exactly, and the cursor
// and the parked list keep their meaning.
func TestOutboxRowsCarryOverUpAndDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.New(t)
	if _, err := store.MigrateUpTo(ctx, dsn, 18); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	old := []oldRecord{
		{1, "KAFKA_SCHD", "UPSERT", 1, 1, 1, `{"s":1}`}, // a pair at or below the cursor
		{2, "KAFKA_MSG", "NOTICE", 1, 1, 1, `{"n":1}`},
		{3, "KAFKA_SCHD", "UPSERT", 2, 2, 2, `{"s":2}`}, // the cursor splits this pair
		{4, "KAFKA_MSG", "NOTICE", 2, 2, 2, `{"n":2}`},
		{5, "KAFKA_SCHD", "DELETE", 3, 3, 3, `{"s":3}`}, // a pair above, its state parked
		{6, "KAFKA_MSG", "NOTICE", 3, 3, 3, `{"n":3}`},
		{7, "KAFKA_SCHD", "DELETE", 3, 3, 3, `{"s":3}`}, // a re-delivered copy
		{8, "KAFKA_MSG", "NOTICE", 4, 4, 4, `{"n":4}`},  // a lone notice, parked
		{9, "KAFKA_SCHD", "UPSERT", 5, 5, 5, `{"s":5}`}, // a pair above, its notice parked
		{10, "KAFKA_MSG", "NOTICE", 5, 5, 5, `{"n":5}`},
	}
	for _, r := range old {
		exec(t, conn, `INSERT INTO msg_event (id, kind, event, flid, state_version, message_id, payload) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			r.ID, r.Kind, r.Event, r.FLID, r.Version, r.Msg, r.Payload)
	}
	exec(t, conn, `SELECT setval('msg_event_id_seq', 10)`)
	exec(t, conn, `UPDATE msg_event_cursor SET delivered_id = 3`)
	exec(t, conn, `INSERT INTO msg_event_parked (event_id, last_error, attempts) VALUES (5, 'too large', 2), (8, 'invalid', 1), (10, 'invalid', 1)`)

	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatalf("up to 19 with rows: %v", err)
	}
	type row struct {
		ID            int64
		Event         *string
		State, Notice *string
	}
	rows, err := pgx.CollectRows(must(conn.Query(ctx, `SELECT id, event, state, notice FROM msg_event ORDER BY id`)), pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	s := func(v string) *string { return &v }
	want := []row{
		{2, s("UPSERT"), s(`{"s":1}`), s(`{"n":1}`)},
		{3, s("UPSERT"), s(`{"s":2}`), nil},
		{4, nil, nil, s(`{"n":2}`)},
		{6, s("DELETE"), s(`{"s":3}`), s(`{"n":3}`)},
		{7, s("DELETE"), s(`{"s":3}`), nil},
		{8, nil, nil, s(`{"n":4}`)},
		{10, s("UPSERT"), s(`{"s":5}`), s(`{"n":5}`)},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Fatalf("rows after up (-want +got):\n%s", diff)
	}
	type parked struct {
		ID       int64
		Kind     string
		Error    string
		Attempts int
	}
	parkedNow := func() []parked {
		got, err := pgx.CollectRows(must(conn.Query(ctx, `SELECT event_id, kind, last_error, attempts FROM msg_event_parked ORDER BY event_id, kind`)),
			pgx.RowToStructByPos[parked])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if diff := cmp.Diff([]parked{{6, "KAFKA_SCHD", "too large", 2}, {8, "KAFKA_MSG", "invalid", 1}, {10, "KAFKA_MSG", "invalid", 1}}, parkedNow()); diff != "" {
		t.Fatalf("parked after up (-want +got):\n%s", diff)
	}
	// The records on each side of the cursor are the old rows on that side
	// (as the view shows them), and the dispatcher counts the same pending.
	var below, above int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE id <= 3), count(*) FILTER (WHERE id > 3) FROM msg_event_record`).Scan(&below, &above); err != nil {
		t.Fatal(err)
	}
	if below != 3 || above != 7 {
		t.Fatalf("records at or below the cursor %d, above %d; want 3 and 7 as the old rows", below, above)
	}
	st, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if pending, parkedN, _, err := st.OutboxFigures(ctx); err != nil || pending != 4 || parkedN != 3 {
		t.Fatalf("pending %d parked %d %v; want 4 (rows 4, 6, 7, 9 before) and 3", pending, parkedN, err)
	}

	// A row written after the migration: its id is two past the last, and
	// its state parked.
	var fresh int64
	if err := conn.QueryRow(ctx, `INSERT INTO msg_event (flid, state_version, message_id, event, state, notice)
		VALUES (6, 6, 6, 'UPSERT', '{"s":6}', '{"n":6}') RETURNING id`).Scan(&fresh); err != nil {
		t.Fatal(err)
	}
	if fresh < 12 || !errors.Is(conn.QueryRow(ctx, `SELECT 1 FROM msg_event WHERE id = $1`, fresh-1).Scan(new(int)), pgx.ErrNoRows) {
		t.Fatalf("new row %d: want the id below it free and past the old ids", fresh)
	}
	exec(t, conn, `INSERT INTO msg_event_parked (event_id, kind, last_error) VALUES ($1, 'KAFKA_SCHD', 'too large')`, fresh)

	if _, err := store.MigrateDownTo(ctx, dsn, 18); err != nil {
		t.Fatalf("down to 18 with rows: %v", err)
	}
	back := append(old, oldRecord{fresh - 1, "KAFKA_SCHD", "UPSERT", 6, 6, 6, `{"s":6}`}, oldRecord{fresh, "KAFKA_MSG", "NOTICE", 6, 6, 6, `{"n":6}`})
	if diff := cmp.Diff(back, oldRecords(t, conn)); diff != "" {
		t.Fatalf("rows after down (-want +got):\n%s", diff)
	}
	ids, err := pgx.CollectRows(must(conn.Query(ctx, `SELECT event_id FROM msg_event_parked ORDER BY event_id`)), pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{5, 8, 10, fresh - 1}, ids); diff != "" {
		t.Fatalf("parked after down (-want +got):\n%s", diff)
	}
	var cursor int64
	if err := conn.QueryRow(ctx, `SELECT delivered_id FROM msg_event_cursor`).Scan(&cursor); err != nil || cursor != 3 {
		t.Fatalf("cursor %d %v, want 3", cursor, err)
	}
	var next int64
	if err := conn.QueryRow(ctx, `SELECT nextval('msg_event_id_seq')`).Scan(&next); err != nil || next != fresh+1 {
		t.Fatalf("next id %d %v, want %d: one apart again", next, err, fresh+1)
	}
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
