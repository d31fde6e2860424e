package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// roundTrips counts client→server round trips: each Query/Exec is one, a
// whole batch is one, and so is a COPY.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (r *roundTrips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// A snapshot, a FLOP batch, an FDEL and a consistent read cost the same
// number of round trips for 5 flights as for 400: nothing is per flight.
func TestRoundTripsDoNotGrowWithFlights(t *testing.T) {
	t.Parallel()
	measure := func(n int) []int64 {
		ctx := context.Background()
		rt := &roundTrips{}
		db := storetest.New(t, store.Options{Tracer: rt})
		s, epoch := db.Store, db.Epoch
		var records []store.SnapshotRecord
		var flids []flight.FLID
		var flops []flight.Commands
		for i := range n {
			f := flight.FLID(1000 + i)
			flids = append(flids, f)
			records = append(records, store.SnapshotRecord{Day: "2026-09-09", Cmds: flight.Commands{FLID: f, Full: true, Cmds: []flight.Command{
				{Tag: "FLNO", Op: flight.OpSet, Value: fmt.Sprintf("CA%d", i)},
				{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"GTNO": "1", "GATE": "A1"}, {"GTNO": "2", "GATE": "A2"}}},
				{Tag: "ROUT", Op: flight.OpReplace, Items: []flight.Item{{"RTNO": "1", "APCD": "PEK"}}},
				{Tag: "FDIV", Op: flight.OpSet, Anomaly: flight.Item{"DDES": "HKG"}},
			}}})
			flops = append(flops, flight.Commands{FLID: f, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP260900"}}})
		}
		var counts []int64
		step := func(fn func(tx *store.Tx) error) {
			tx, err := s.Begin(ctx, epoch)
			if err != nil {
				t.Fatal(err)
			}
			before := rt.n.Load()
			if err := fn(tx); err != nil {
				t.Fatal(err)
			}
			counts = append(counts, rt.n.Load()-before)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		step(func(tx *store.Tx) error {
			_, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: 1}, store.Snapshot{FullDay: true, Day: "2026-09-09", Records: records})
			return err
		})
		step(func(tx *store.Tx) error {
			_, err := storetest.ApplyIncrement(ctx, tx, store.Meta{MessageID: 2}, flops)
			return err
		})
		// The next snapshot drops half the day: diff-delete of n/2 flights.
		step(func(tx *store.Tx) error {
			_, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: 3}, store.Snapshot{FullDay: true, Day: "2026-09-09", Records: records[:n/2]})
			return err
		})
		step(func(tx *store.Tx) error {
			_, err := storetest.DeleteFlights(ctx, tx, store.Meta{MessageID: 4}, flids[:n/4])
			return err
		})
		before := rt.n.Load()
		states, err := s.ReadFlights(ctx, store.Filter{})
		if err != nil || len(states) != n/2-n/4 {
			t.Fatalf("read %d flights: %v", len(states), err)
		}
		counts = append(counts, rt.n.Load()-before)
		return counts
	}
	small, large := measure(8), measure(400)
	for i, name := range []string{"snapshot", "FLOP batch", "diff-delete snapshot", "FDEL", "consistent read"} {
		if small[i] != large[i] {
			t.Errorf("%s: %d round trips for 8 flights, %d for 400", name, small[i], large[i])
		}
	}
	t.Logf("round trips per operation: %v", small)
}
