package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// BenchmarkSnapshotApply writes a full-day snapshot of 2,000 flights (each
// with gates, a route and an anomaly) through the store, replacing the
// previous generation, and reports it against a baseline measured in the
// same run: the same rows written by COPY into plain tables, the floor of
// any bulk write on this PostgreSQL.
//
//	go test -bench SnapshotApply -run '^$' ./hack/bench/
func BenchmarkSnapshotApply(b *testing.B) {
	const n = 2000
	ctx := context.Background()
	dsn := pgtest.New(b)
	if _, err := store.Migrate(ctx, dsn); err != nil {
		b.Fatal(err)
	}
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	epoch, err := s.TakeEpoch(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, `CREATE TABLE base_main (flid bigint PRIMARY KEY, flno text, sodt text, fdiv_ddes text);
		CREATE TABLE base_child (flid bigint, ordinal int, gate text, PRIMARY KEY (flid, ordinal))`); err != nil {
		b.Fatal(err)
	}

	records := func(gen int) []store.SnapshotRecord {
		out := make([]store.SnapshotRecord, n)
		for i := range out {
			out[i] = store.SnapshotRecord{Day: "2026-09-09", Cmds: flight.Commands{FLID: flight.FLID(100000 + i), Full: true, Cmds: []flight.Command{
				{Tag: "FLNO", Op: flight.OpSet, Value: fmt.Sprintf("CA%d", i)},
				{Tag: "SODT", Op: flight.OpSet, Value: "09SEP260800"},
				{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"GTNO": "1", "GATE": fmt.Sprintf("A%d", gen)}, {"GTNO": "2", "GATE": "B2"}}},
				{Tag: "ROUT", Op: flight.OpReplace, Items: []flight.Item{{"RTNO": "1", "APCD": "PEK"}}},
				{Tag: "FDIV", Op: flight.OpSet, Anomaly: flight.Item{"DDES": "HKG"}},
			}}}
		}
		return out
	}

	var snapshotTime, copyTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		recs := records(i) // every generation changes every flight's gates
		start := time.Now()
		tx, err := s.Begin(ctx, epoch)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: int64(i + 1), Type: "SCHD", Styp: "RESP"},
			store.Snapshot{FullDay: true, Day: "2026-09-09", Records: recs}); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		snapshotTime += time.Since(start)

		start = time.Now()
		if err := copyBaseline(ctx, conn, n, i); err != nil {
			b.Fatal(err)
		}
		copyTime += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(snapshotTime.Milliseconds())/float64(b.N), "snapshot-ms/op")
	b.ReportMetric(float64(copyTime.Milliseconds())/float64(b.N), "copy-baseline-ms/op")
	b.ReportMetric(float64(snapshotTime)/float64(copyTime), "x-baseline")
}

// copyBaseline writes the same rows with COPY in one transaction after
// clearing the previous generation.
func copyBaseline(ctx context.Context, conn *pgx.Conn, n, gen int) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `TRUNCATE base_main, base_child`); err != nil {
		return err
	}
	main := make([][]any, n)
	child := make([][]any, 0, 2*n)
	for i := range main {
		flid := int64(100000 + i)
		main[i] = []any{flid, fmt.Sprintf("CA%d", i), "09SEP260800", "HKG"}
		child = append(child, []any{flid, int32(1), fmt.Sprintf("A%d", gen)}, []any{flid, int32(2), "B2"})
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"base_main"}, []string{"flid", "flno", "sodt", "fdiv_ddes"}, pgx.CopyFromRows(main)); err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"base_child"}, []string{"flid", "ordinal", "gate"}, pgx.CopyFromRows(child)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
