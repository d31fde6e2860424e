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

// BenchmarkIncrementMainRow applies FLOPs that change main-row columns
// only to 2,000 existing full flights through the store's own API, in
// transactions of 200 flights with a state cache (the pump's path):
// "two" changes ESTT and STND of every flight, "mixed" two of twelve
// scalars chosen by flight and round (a batch's union is most of the
// twelve). It reports what PostgreSQL spent per row: WAL bytes and the CPU
// time of the store's one backend (utime+stime from /proc, so the figure
// does not move with the load of the machine the way wall time does).
// WAL is reported three ways: the LSN difference (the whole server), and,
// read back with pg_walinspect, the records of this database and those of
// flight_schd alone, both without full-page images (their number depends
// on when the server's checkpoints fall, which other databases move).
// Wall ns/op is printed too.
//
//	go test -bench IncrementMainRow -run '^$' -benchtime 5x ./hack/bench/
func BenchmarkIncrementMainRow(b *testing.B) {
	tags := []string{"ESTT", "STND", "ACTT", "PHAG", "FHAG", "MHAG", "REMC", "BOTM", "LACL", "FINT", "APPT", "EGSR"}
	b.Run("two", func(b *testing.B) {
		benchIncrement(b, func(_, r int) []flight.Command {
			return []flight.Command{
				{Tag: "ESTT", Op: flight.OpSet, Value: fmt.Sprintf("09SEP26%04d", 1000+r%1000)},
				{Tag: "STND", Op: flight.OpSet, Value: "S" + strconv.Itoa(r)},
			}
		})
	})
	b.Run("mixed", func(b *testing.B) {
		benchIncrement(b, func(i, r int) []flight.Command {
			a, c := (i+r)%len(tags), (i*7+r+1)%len(tags)
			if a == c {
				c = (c + 1) % len(tags)
			}
			if flight.FieldOrder(tags[a]) > flight.FieldOrder(tags[c]) {
				a, c = c, a // commands go in canonical field order
			}
			v := "V" + strconv.Itoa(r)
			return []flight.Command{{Tag: tags[a], Op: flight.OpSet, Value: v}, {Tag: tags[c], Op: flight.OpSet, Value: v}}
		})
	})
}

func benchIncrement(b *testing.B, change func(i, r int) []flight.Command) {
	const flights, perTx = 2000, 200
	ctx := context.Background()
	s, epoch, dsn := benchStoreOne(b)
	defer s.Close()
	recs := benchRecords(flights, 0)
	if err := applySnapshot(s, epoch, 1, recs); err != nil {
		b.Fatal(err)
	}
	cache := store.NewStateCache(0)
	msg := int64(1)
	round := func(r int) {
		for start := 0; start < flights; start += perTx {
			msg++
			records := make([]flight.Commands, 0, perTx)
			flids := make([]flight.FLID, 0, perTx)
			for i := start; i < start+perTx; i++ {
				f := recs[i].Cmds.FLID
				flids = append(flids, f)
				records = append(records, flight.Commands{FLID: f, Cmds: change(i, r)})
			}
			tx, err := s.Begin(ctx, epoch)
			if err != nil {
				b.Fatal(err)
			}
			// A failed transaction is rolled back before Fatal, or closing
			// the one-connection pool would wait for it forever.
			fail := func(err error) { _ = tx.Rollback(ctx); b.Fatal(err) }
			set, err := tx.LoadSet(ctx, flids, len(records), cache)
			if err != nil {
				fail(err)
			}
			if _, err := set.Increment(store.Meta{MessageID: msg, Type: "FLOP", Styp: "UPDT"}, records); err != nil {
				fail(err)
			}
			if err := tx.WriteSet(ctx, set); err != nil {
				fail(err)
			}
			if err := tx.Commit(ctx); err != nil {
				fail(err)
			}
			cache.Keep(set)
		}
	}
	round(0) // warm: the cache and the connection's prepared statements
	measurePerRow(b, dsn, flights, func(i int) { round(i + 1) })
}

// BenchmarkInsertMainRow applies, per iteration, a full-day snapshot of
// 2,000 new fully populated flights (a day of its own each time) and
// reports the store backend's CPU and WAL per flight, as
// BenchmarkIncrementMainRow does. Child rows dominate; the difference
// between two builds is the main-row insert.
//
//	go test -bench InsertMainRow -run '^$' -benchtime 3x ./hack/bench/
func BenchmarkInsertMainRow(b *testing.B) {
	const flights = 2000
	ctx := context.Background()
	s, epoch, dsn := benchStoreOne(b)
	defer s.Close()
	day := func(i int) string {
		return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format(time.DateOnly)
	}
	snap := func(i int) {
		recs := make([]store.SnapshotRecord, flights)
		for k := range recs {
			recs[k] = storetest.FullRecord(flight.FLID(1_000_000+i*flights+k), day(i), k%97, "A1", false)
		}
		tx, err := s.Begin(ctx, epoch)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: int64(i + 1), Type: "SCHD", Styp: "RESP"},
			store.Snapshot{FullDay: true, Day: day(i), Records: recs}); err != nil {
			_ = tx.Rollback(ctx)
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			_ = tx.Rollback(ctx)
			b.Fatal(err)
		}
	}
	snap(0) // warm
	measurePerRow(b, dsn, flights, func(i int) { snap(i + 1) })
}

// measurePerRow runs op b.N times and reports the store backend's CPU and
// the WAL written per row (rows per op).
func measurePerRow(b *testing.B, dsn string, rows int, op func(i int)) {
	ctx := context.Background()
	mon, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = mon.Close(ctx) }()
	if _, err := mon.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`); err != nil {
		b.Fatalf("pg_walinspect (PostgreSQL 15 contrib, superuser): %v", err)
	}
	pid := storeBackend(b, mon)
	lsn := func() int64 {
		var v int64
		if err := mon.QueryRow(ctx, `SELECT (pg_current_wal_flush_lsn() - '0/0')::bigint`).Scan(&v); err != nil {
			b.Fatal(err)
		}
		return v
	}
	walBefore, cpuBefore := lsn(), backendCPU(b, pid)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op(i)
	}
	b.StopTimer()
	walAfter, cpuAfter := lsn(), backendCPU(b, pid)
	n := float64(b.N * rows)
	b.ReportMetric(float64(walAfter-walBefore)/n, "WAL-B/row")
	b.ReportMetric(float64(cpuAfter-cpuBefore)*1e6/clockTicks/n, "backend-CPU-µs/row")
	// The LSN difference includes what other databases of the server
	// wrote meanwhile; pg_walinspect attributes records by the relation
	// they touch: this database's, and flight_schd's (heap and indexes).
	// Full-page images are left out: checkpoints decide them.
	// HOT-% is the share of flight_schd's row updates that left its
	// indexes alone (heap HOT_UPDATE records).
	var dbWAL, mainWAL, updates, hot int64
	err = mon.QueryRow(ctx, `WITH r AS (
			SELECT record_length - fpi_length AS record_length, record_type, block_ref FROM pg_get_wal_records_info(
				('0/0'::pg_lsn + $1::numeric), ('0/0'::pg_lsn + $2::numeric))),
		heap AS (SELECT '/' || d.oid || '/' || pg_relation_filenode('flight_schd') || ' ' AS ref, d.oid
			FROM pg_database d WHERE d.datname = current_database())
		SELECT coalesce(sum(record_length) FILTER (WHERE block_ref ~ ('/' || h.oid || '/')), 0)::bigint,
			coalesce(sum(record_length) FILTER (WHERE EXISTS (
				SELECT 1 FROM pg_class c WHERE (c.oid = 'flight_schd'::regclass OR c.oid IN
					(SELECT indexrelid FROM pg_index WHERE indrelid = 'flight_schd'::regclass))
				AND r.block_ref ~ ('/' || h.oid || '/' || pg_relation_filenode(c.oid) || ' '))), 0)::bigint,
			count(*) FILTER (WHERE record_type IN ('UPDATE', 'HOT_UPDATE') AND strpos(block_ref, h.ref) > 0),
			count(*) FILTER (WHERE record_type = 'HOT_UPDATE' AND strpos(block_ref, h.ref) > 0)
		FROM r, heap h`, walBefore, walAfter).Scan(&dbWAL, &mainWAL, &updates, &hot)
	if err != nil {
		// Other databases' writes may have recycled the segments already.
		b.Logf("pg_walinspect (per-database WAL not reported): %v", err)
		return
	}
	b.ReportMetric(float64(dbWAL)/n, "db-WAL-noFPI-B/row")
	b.ReportMetric(float64(mainWAL)/n, "main-WAL-noFPI-B/row")
	if updates > 0 {
		b.ReportMetric(100*float64(hot)/float64(updates), "HOT-%")
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's utime and stime.
const clockTicks = 100

// benchStoreOne is benchStore with a pool of one connection, so one backend
// does all of the store's work.
func benchStoreOne(b *testing.B) (*store.Store, int64, string) {
	ctx := context.Background()
	dsn := pgtest.New(b)
	if _, err := store.Migrate(ctx, dsn); err != nil {
		b.Fatal(err)
	}
	s, err := store.Open(ctx, dsn, store.Options{MaxConns: 1})
	if err != nil {
		b.Fatal(err)
	}
	epoch, err := s.TakeEpoch(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return s, epoch, dsn
}

// storeBackend is the process id of the one other session on mon's
// database: the store's connection.
func storeBackend(b *testing.B, mon *pgx.Conn) int {
	var pid int
	err := mon.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&pid)
	if err != nil {
		b.Fatalf("find the store's backend: %v", err)
	}
	return pid
}

// backendCPU is the user plus system CPU time of process pid, in clock
// ticks.
func backendCPU(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("backend CPU (PostgreSQL must run on this machine): %v", err)
	}
	// The fields after the command name (which may hold spaces) are
	// space-separated; utime and stime are fields 14 and 15.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parse /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return utime + stime
}
