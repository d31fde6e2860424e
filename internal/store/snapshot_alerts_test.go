package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/store"
)

// A full-day snapshot reports the facts of the trace log's alerts (processing rules
// R5.6): the day's roster size before and after it (RECS_DROP) and the send
// time of the day's previous committed snapshot (OUT_OF_ORDER), which the
// ledger keeps; a window reports none.
func TestSnapshotReportsRosterSizesAndPreviousSendTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	t1 := time.Date(2026, 9, 9, 10, 0, 0, 0, shanghai)
	t0 := t1.Add(-time.Hour)
	apply := func(snap store.Snapshot) store.SnapshotEffect {
		t.Helper()
		var out store.SnapshotEffect
		if err := f.inTx(func(tx *store.Tx) error {
			var err error
			out, err = tx.ApplySnapshot(t.Context(), f.nextMeta("SCHD", "RESP"), snap)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	type facts struct {
		OldRoster, NewRoster int
		PrevSentAt           time.Time
	}
	got := func(e store.SnapshotEffect) facts { return facts{e.OldRoster, e.NewRoster, e.PrevSentAt} }

	first := apply(store.Snapshot{FullDay: true, Day: day9, SentAt: t1, Records: []store.SnapshotRecord{rec(1, "CA1", day9), rec(2, "CA2", day9), rec(3, "CA3", day9)}})
	if diff := cmp.Diff(facts{0, 3, time.Time{}}, got(first)); diff != "" {
		t.Fatalf("first snapshot (-want +got):\n%s", diff)
	}
	older := apply(store.Snapshot{FullDay: true, Day: day9, SentAt: t0, Records: []store.SnapshotRecord{rec(1, "CA1", day9)}})
	if diff := cmp.Diff(facts{3, 1, t1}, facts{older.OldRoster, older.NewRoster, older.PrevSentAt.In(shanghai)}); diff != "" {
		t.Fatalf("second snapshot (-want +got):\n%s", diff)
	}
	unknown := apply(store.Snapshot{FullDay: true, Day: day9, Records: []store.SnapshotRecord{rec(1, "CA1", day9)}})
	if !unknown.PrevSentAt.Equal(t0) {
		t.Fatalf("third snapshot: previous send time %s, want %s", unknown.PrevSentAt, t0)
	}
	next := apply(store.Snapshot{FullDay: true, Day: day9, SentAt: t1, Records: []store.SnapshotRecord{rec(1, "CA1", day9)}})
	if !next.PrevSentAt.IsZero() {
		t.Fatalf("a snapshot without a send time left %s as the day's", next.PrevSentAt)
	}
	window := apply(store.Snapshot{SentAt: t0, Records: []store.SnapshotRecord{rec(1, "CA1", day9)}})
	if diff := cmp.Diff(facts{}, got(window)); diff != "" {
		t.Fatalf("window (-want +got):\n%s", diff)
	}
}
