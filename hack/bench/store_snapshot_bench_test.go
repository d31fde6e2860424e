package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// BenchmarkSnapshotApply applies a single-day RESP of 2,000 realistic
// flights (every collection kind, anomalies and records populated;
// FLIGHTFEED_BENCH_FLIGHTS overrides) and commits it, then the same day
// again with 5 % of the flights changed and 1 % missing (diff-deleted).
// The same two snapshots are also written by a naive one-flight-at-a-time
// implementation (load each flight table by table, write each row) into a
// second database in the same run; the ratio is naive / store.
//
//	go test -bench SnapshotApply -run '^$' -benchtime 1x ./hack/bench/
func BenchmarkSnapshotApply(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("FLIGHTFEED_BENCH_FLIGHTS")); err == nil && v > 0 {
		n = v
	}
	first, second := benchRecords(n, 0), benchRecords(n, 1)
	var storeGen1, storeGen2, naiveGen1, naiveGen2 time.Duration
	for i := 0; i < b.N; i++ {
		s, epoch := benchStore(b)
		storeGen1 += timeIt(b, func() error { return applySnapshot(s, epoch, 1, first) })
		storeGen2 += timeIt(b, func() error { return applySnapshot(s, epoch, 2, second) })
		s.Close()

		conn := benchConn(b)
		naiveGen1 += timeIt(b, func() error { return naiveSnapshot(conn, first) })
		naiveGen2 += timeIt(b, func() error { return naiveSnapshot(conn, second) })
		_ = conn.Close(context.Background())
	}
	per := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
	b.ReportMetric(per(storeGen1), "first-ms")
	b.ReportMetric(per(storeGen2), "second-ms")
	b.ReportMetric(per(naiveGen1), "naive-first-ms")
	b.ReportMetric(per(naiveGen2), "naive-second-ms")
	b.ReportMetric(float64(naiveGen1+naiveGen2)/float64(storeGen1+storeGen2), "x-naive")
}

func timeIt(b *testing.B, fn func() error) time.Duration {
	start := time.Now()
	if err := fn(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func benchStore(b *testing.B) (*store.Store, int64) {
	ctx := context.Background()
	dsn := pgtest.New(b)
	if _, err := store.Migrate(ctx, dsn); err != nil {
		b.Fatal(err)
	}
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	epoch, err := s.TakeEpoch(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return s, epoch
}

func benchConn(b *testing.B) *pgx.Conn {
	ctx := context.Background()
	dsn := pgtest.New(b)
	if _, err := store.Migrate(ctx, dsn); err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	return conn
}

func applySnapshot(s *store.Store, epoch, msg int64, recs []store.SnapshotRecord) error {
	ctx := context.Background()
	tx, err := s.Begin(ctx, epoch)
	if err != nil {
		return err
	}
	if _, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: msg, Type: "SCHD", Styp: "RESP"},
		store.Snapshot{FullDay: true, Day: "2026-09-09", Records: recs}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// benchRecords builds n flights; generation 1 changes 5 % of them and drops
// 1 %.
func benchRecords(n, gen int) []store.SnapshotRecord {
	var out []store.SnapshotRecord
	for i := range n {
		if gen == 1 && i%100 == 99 {
			continue // 1 % missing
		}
		gate := "A1"
		if gen == 1 && i%20 == 0 {
			gate = "B7" // 5 % changed
		}
		out = append(out, storetest.FullRecord(flight.FLID(500000+i), "2026-09-09", i%97, gate, false))
	}
	return out
}

// naiveSnapshot is what a straightforward implementation does: for every
// flight, read the main row and each child table, write the main row, and
// rewrite every child table row by row; then diff-delete flight by flight.
// It keeps the same rows as the store (same tables), so the comparison is
// about round trips, not about work left out.
func naiveSnapshot(conn *pgx.Conn, recs []store.SnapshotRecord) error {
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT epoch FROM pipeline_lock WHERE name = 'FLIGHT_SCHD_WRITER' FOR UPDATE`); err != nil {
		return err
	}
	seen := map[int64]bool{}
	tables := []string{"flight_gate", "flight_checkin", "flight_belt", "flight_stand_plan", "flight_chute",
		"flight_delay", "flight_bridge_op", "flight_chock_op", "flight_route_point"}
	for _, r := range recs {
		flid := int64(r.Cmds.FLID)
		seen[flid] = true
		var v int64
		_ = tx.QueryRow(ctx, `SELECT state_version FROM flight_schd WHERE flid = $1`, flid).Scan(&v)
		for _, t := range tables {
			rows, err := tx.Query(ctx, `SELECT * FROM `+t+` WHERE flid = $1`, flid)
			if err != nil {
				return err
			}
			rows.Close()
		}
		var cols, marks, sets []string
		args := []any{flid, "2026-09-09", v + 1}
		for _, c := range r.Cmds.Cmds {
			if c.Op == flight.OpSet && c.Value != "" {
				col := strings.ToLower(c.Tag)
				cols = append(cols, col)
				args = append(args, c.Value)
				marks = append(marks, fmt.Sprintf("$%d", len(args)))
				sets = append(sets, col+" = EXCLUDED."+col)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO flight_schd (flid, operation_day, state_version, last_message_id, `+strings.Join(cols, ", ")+
			`) VALUES ($1, $2::date, $3, 1, `+strings.Join(marks, ", ")+`) ON CONFLICT (flid) DO UPDATE SET state_version = EXCLUDED.state_version, `+
			strings.Join(sets, ", "), args...); err != nil {
			return err
		}
		for _, c := range r.Cmds.Cmds {
			spec, _ := flight.Lookup(c.Tag)
			if spec.Kind != flight.KindCollection {
				continue
			}
			if _, err := tx.Exec(ctx, `DELETE FROM `+spec.Table+` WHERE flid = $1`, flid); err != nil {
				return err
			}
			for k, it := range c.Items {
				if spec.RouteKind != "" {
					_, err = tx.Exec(ctx, `INSERT INTO flight_route_point (flid, route_kind, ordinal, source_seq, record_version) VALUES ($1, $2, $3, $4, $5)`,
						flid, spec.RouteKind, k+1, it[spec.SeqAttr], v+1)
				} else {
					_, err = tx.Exec(ctx, `INSERT INTO `+spec.Table+` (flid, ordinal, source_seq, record_version) VALUES ($1, $2, $3, $4)`,
						flid, k+1, it[spec.SeqAttr], v+1)
				}
				if err != nil {
					return err
				}
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO msg_event (event, flid, state_version, message_id, state, notice) VALUES ('UPSERT', $1, $2, 1, '{}', '{}')`,
			flid, v+1); err != nil {
			return err
		}
	}
	rows, err := tx.Query(ctx, `SELECT flid FROM flight_schd WHERE operation_day = '2026-09-09'`)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		for _, t := range tables {
			if _, err := tx.Exec(ctx, `DELETE FROM `+t+` WHERE flid = $1`, id); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM flight_schd WHERE flid = $1`, id); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}
