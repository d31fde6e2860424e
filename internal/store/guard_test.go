package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/store"
)

// guardCalls runs sql in a transaction of its own and returns how many
// times it called the trigger function flight_schd_guard.
func guardCalls(t *testing.T, conn *pgx.Conn, sql string) int64 {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The view shows the session's counts not yet flushed, which may
	// include earlier transactions': take the difference.
	count := func() int64 {
		var calls int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_xact_user_functions
			WHERE funcname = 'flight_schd_guard'`).Scan(&calls); err != nil {
			t.Fatal(err)
		}
		return calls
	}
	before := count()
	if _, err := tx.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	calls := count() - before
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return calls
}

// TestGuardRunsOnlyWhenARuleBreaks: since 00015 an update of flight_schd
// that keeps its rules (day set once, FLID fixed, version rising) does
// not enter the PL/pgSQL guard, while any writer that breaks one is still
// refused with the same error. 00015 down restores the per-row call and
// keeps the rules.
func TestGuardRunsOnlyWhenARuleBreaks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, dsn := migratedAt(t)
	exec(t, conn, `SET track_functions = 'pl'`)
	day := time.Date(2026, 9, 9, 0, 0, 0, 0, time.UTC)
	for f := int64(1); f <= 20; f++ {
		insertFlight(t, conn, f, day, f)
	}
	const conforming = `UPDATE flight_schd SET state_version = state_version + 100, estt = 'x', operation_day = operation_day`

	rulesHold := func(stage string) {
		t.Helper()
		if hint := execFails(t, conn, "FF001", `UPDATE flight_schd SET operation_day = $1, state_version = state_version + 1000 WHERE flid = 3`,
			day.AddDate(0, 0, 1)); hint != "SAME_FLID_ACROSS_OPERATION_DAYS" {
			t.Errorf("%s: day change hint = %q", stage, hint)
		}
		_ = execFails(t, conn, "FF001", `UPDATE flight_schd SET operation_day = NULL, state_version = state_version + 1000 WHERE flid = 3`)
		_ = execFails(t, conn, "FF002", `UPDATE flight_schd SET flid = 99, state_version = state_version + 1000 WHERE flid = 3`)
		_ = execFails(t, conn, "FF003", `UPDATE flight_schd SET state_version = state_version WHERE flid = 3`)
	}

	if n := guardCalls(t, conn, conforming); n != 0 {
		t.Errorf("conforming update of 20 rows called the guard %d times, want 0", n)
	}
	rulesHold("up")

	down, err := store.MigrateDownTo(ctx, dsn, 14)
	if err != nil {
		t.Fatalf("down to 14: %v", err)
	}
	if n := guardCalls(t, conn, conforming); n != 20 {
		t.Errorf("after down: conforming update of 20 rows called the guard %d times, want 20", n)
	}
	rulesHold("down")

	// Up again applies what down rolled back: 00015 and the migrations after it.
	if again, err := store.Migrate(ctx, dsn); err != nil || len(again) != len(down) {
		t.Fatalf("up again: applied %d of the %d rolled back, %v", len(again), len(down), err)
	}
	if n := guardCalls(t, conn, conforming); n != 0 {
		t.Errorf("up again: conforming update called the guard %d times, want 0", n)
	}
	rulesHold("up again")
}
