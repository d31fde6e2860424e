package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
)

// walProbe measures what PostgreSQL writes during a drain, counts of work
// that the machine's load does not move:
//
//   - the WAL records of the feed's database alone: pg_walinspect reads the
//     WAL between the LSNs before and after the drain and keeps the records
//     that touch one of the database's relations, with the commit records
//     of their transactions (the server is shared: other databases' records
//     are left out). A temporary physical replication slot, opened for the
//     drain and gone with the probe's session, keeps a checkpoint from
//     recycling the WAL before it is read. Full-page images (after a
//     checkpoint) are counted apart;
//   - pg_stat_wal of the whole server, which includes every other
//     database's activity, autovacuum and checkpoints;
//   - the rows inserted into backfill_todo (one index entry each, its
//     primary key).
type walProbe struct {
	conn           *pgx.Conn
	dbOID          uint32
	startLSN       string
	records, bytes int64
	intents        int64
	err            error
	// after the drain: the server's counters, and this database's records
	mine, mineBytes, mineFPI, mineFPIBytes int64
}

func (f *feed) startWAL(ctx context.Context) *walProbe {
	p := &walProbe{}
	if p.conn, p.err = pgx.Connect(ctx, f.pgDSN); p.err != nil {
		return p
	}
	slot := fmt.Sprintf("ff_bench_wal_%d", os.Getpid())
	for _, q := range []string{
		`CREATE EXTENSION IF NOT EXISTS pg_walinspect`,
		`SELECT 1 FROM pg_create_physical_replication_slot('` + slot + `', true, true)`,
	} {
		if _, p.err = p.conn.Exec(ctx, q); p.err != nil {
			return p
		}
	}
	p.err = p.conn.QueryRow(ctx, `SELECT (SELECT oid FROM pg_database WHERE datname = current_database()), pg_current_wal_lsn()::text,
		(SELECT wal_records FROM pg_stat_wal), (SELECT wal_bytes::bigint FROM pg_stat_wal),
		(SELECT coalesce(sum(n_tup_ins), 0)::bigint FROM pg_stat_user_tables WHERE relname = 'backfill_todo')`).
		Scan(&p.dbOID, &p.startLSN, &p.records, &p.bytes, &p.intents)
	return p
}

// finish reads what the drain wrote, at once after it (the slot goes with
// the probe's session).
func (p *walProbe) finish(ctx context.Context) {
	if p.conn != nil {
		defer func() { _ = p.conn.Close(ctx) }()
	}
	if p.err != nil {
		return
	}
	var records, bytes, intents int64
	// The pump has exited: its backends flushed their table statistics.
	p.err = p.conn.QueryRow(ctx, `
		WITH r AS MATERIALIZED (SELECT xid, record_length, fpi_length, block_ref
			FROM pg_get_wal_records_info($1::pg_lsn, pg_current_wal_flush_lsn())),
		mine AS (SELECT DISTINCT xid FROM r WHERE xid::text <> '0' AND block_ref LIKE $2)
		SELECT (SELECT wal_records FROM pg_stat_wal), (SELECT wal_bytes::bigint FROM pg_stat_wal),
			(SELECT coalesce(sum(n_tup_ins), 0)::bigint FROM pg_stat_user_tables WHERE relname = 'backfill_todo'),
			count(*), coalesce(sum(record_length), 0), count(*) FILTER (WHERE fpi_length > 0), coalesce(sum(fpi_length), 0)
		FROM r WHERE block_ref LIKE $2 OR xid IN (SELECT xid FROM mine)`,
		p.startLSN, fmt.Sprintf("%%/%d/%%", p.dbOID)).
		Scan(&records, &bytes, &intents, &p.mine, &p.mineBytes, &p.mineFPI, &p.mineFPIBytes)
	p.records, p.bytes, p.intents = records-p.records, bytes-p.bytes, intents-p.intents
}

// line says what the drain of n messages wrote, per message.
func (p *walProbe) line(n int) string {
	if p.err != nil {
		return fmt.Sprintf("WAL: not measured: %v", p.err)
	}
	per := func(d int64) float64 { return float64(d) / float64(n) }
	return fmt.Sprintf("WAL per message, this database (pg_walinspect): %.1f records, %.0f bytes (of which full-page images %.0f bytes in %.2f records); "+
		"whole server (pg_stat_wal, other databases and checkpoints included): %.1f records, %.0f bytes; backfill_todo rows (index entries): %d, %.3f per message",
		per(p.mine), per(p.mineBytes), per(p.mineFPIBytes), per(p.mineFPI), per(p.records), per(p.bytes), p.intents, per(p.intents))
}
