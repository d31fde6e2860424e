package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/store"
)

// TestPruneTraceLogByDayAndReceipt: the trace log is pruned by
// (OPERATION_DAY, RECV_AT) (processing rules R5.6, R8.3). A row goes only when its
// operation day is before the cutoff's airport-zone day and it was received
// before the cutoff; a row without a day goes by its receipt. An old day
// received recently and a recent day received long ago both stay.
func TestPruneTraceLogByDayAndReceipt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, shanghai)
	cutoff := now.AddDate(0, 0, -90) // 2026-09-05 12:00 in Shanghai
	at := func(s string) time.Time {
		ts, err := time.ParseInLocation("2006-01-02 15:04", s, shanghai)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	rows := []struct {
		id       int64
		day      string
		recv     time.Time
		want     bool // kept
		scenario string
	}{
		{1, "2026-08-01", at("2026-08-01 09:00"), false, "old day, old receipt"},
		{2, "2026-08-01", at("2026-11-30 09:00"), true, "old day, recent receipt (late or replayed snapshot)"},
		{3, "2026-12-05", at("2026-08-01 09:00"), true, "recent day, old receipt"},
		{4, "", at("2026-08-01 09:00"), false, "no day, old receipt"},
		{5, "", at("2026-11-30 09:00"), true, "no day, recent receipt"},
		{6, "2026-09-05", at("2026-09-01 09:00"), true, "the cutoff's own day is inside the retention"},
		{7, "2026-09-04", at("2026-09-05 11:59"), false, "the day before the cutoff's, received just before the cutoff"},
		{8, "2026-09-04", at("2026-09-05 12:01"), true, "the day before the cutoff's, received just after the cutoff"},
	}
	for _, r := range rows {
		if err := f.store.AppendTraceLog(ctx, store.TraceEntry{Day: r.day, MessageID: r.id, ReceivedAt: r.recv, Result: store.TraceCommitted}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := f.store.Prune(ctx, cutoff, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.conn.Query(ctx, `SELECT msg_id FROM schd_snap_log ORDER BY msg_id`)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := pgx.CollectRows(res, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	pruned := 0
	for _, r := range rows {
		if got := slices.Contains(kept, r.id); got != r.want {
			t.Errorf("row %d (%s): kept = %v, want %v", r.id, r.scenario, got, r.want)
		}
		if !r.want {
			pruned++
		}
	}
	if n != int64(pruned) {
		t.Errorf("Prune reported %d rows, want %d", n, pruned)
	}
}
