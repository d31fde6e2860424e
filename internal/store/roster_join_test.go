package store_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// A day's first snapshot adds its flights to the roster one WAL record a
// row (its insert; its index entries apart): no speculative insertion,
// whose confirmation was a second record for each row. The rows go in in
// record order, and a flight another day's roster holds is left out of
// this one's, as before.
func TestRosterJoinWritesEachRowOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	exec(t, f.conn, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`)
	const other = 1005
	// A roster row of another day for a flight that has no row: what
	// ON CONFLICT DO NOTHING left alone, and this day's roster did not get.
	exec(t, f.conn, `INSERT INTO schd_gen (operation_day, version, last_message_id, last_recv_at) VALUES ('`+day10+`', 1, 1, now())`)
	exec(t, f.conn, `INSERT INTO schd_gen_flid (operation_day, flid) VALUES ('`+day10+`', 1005)`)
	order := fl(1009, 1002, other, 1007, 1001, 1003, 1008, 1004, 1006)
	recs := make([]store.SnapshotRecord, len(order))
	for i, id := range order {
		recs[i] = rec(id, "CA"+id.String(), day9)
	}
	start := walLSN(t, f.conn)
	f.mustSnapshot(day9, recs...)
	wal := walSince(t, f.conn, start, "schd_gen_flid")
	if want := map[string]int{"INSERT": len(order) - 1}; !maps.Equal(wal, want) {
		t.Errorf("roster heap WAL records %v, want %v: one INSERT a joining flight, no HEAP_CONFIRM", wal, want)
	}
	rows, err := f.conn.Query(context.Background(), `SELECT flid FROM schd_gen_flid WHERE operation_day = $1 ORDER BY ctid`, day9)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, id := range order {
		if id != other {
			want = append(want, int64(id))
		}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("roster of %s in heap order %v, want the records' order without %d: %v", day9, ids, other, want)
	}
	if got := f.roster(day10); !slices.Equal(got, []flight.FLID{other}) {
		t.Errorf("roster of %s = %v, want [%d]", day10, got, other)
	}
}
