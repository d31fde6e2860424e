package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

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
	// relations is where this database's records went, most first.
	relations []walRelation
	// kinds is the same split by record type as well.
	kinds []walRelation
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
	if p.err != nil {
		return
	}
	// Where the records went: by the relation (table or index) of their
	// first block reference, this database's only, and by relation and
	// record type (HOT_UPDATE against UPDATE, PRUNE, INSERT_LEAF...: what
	// kind of work each relation's records are). One read of the range,
	// split both ways here.
	rows, err := p.conn.Query(ctx, `
		SELECT coalesce(c.relname, 'relfilenode ' || x.rel), x.record_type, count(*), sum(x.record_length)::bigint
		FROM (SELECT substring(block_ref from 'rel [0-9]+/[0-9]+/([0-9]+)') AS rel, record_type, record_length
			FROM pg_get_wal_records_info($1::pg_lsn, pg_current_wal_flush_lsn()) WHERE block_ref LIKE $2) x
		LEFT JOIN pg_class c ON c.relfilenode::text = x.rel
		GROUP BY 1, 2`, p.startLSN, fmt.Sprintf("%%/%d/%%", p.dbOID))
	if err != nil {
		p.err = err
		return
	}
	p.relations, p.kinds, p.err = scanRelations(rows)
}

// scanRelations reads rows of (relation, record type, records, bytes) and
// closes them: the relations with their records summed over the types, the
// 12 with the most records first, and the 24 (relation, type) pairs with
// the most.
func scanRelations(rows pgx.Rows) (relations, kinds []walRelation, err error) {
	defer rows.Close()
	byRelation := map[string]walRelation{}
	for rows.Next() {
		var rel, kind string
		var records, bytes int64
		if err := rows.Scan(&rel, &kind, &records, &bytes); err != nil {
			return nil, nil, err
		}
		kinds = append(kinds, walRelation{name: rel + " " + kind, records: records, bytes: bytes})
		r := byRelation[rel]
		r.name, r.records, r.bytes = rel, r.records+records, r.bytes+bytes
		byRelation[rel] = r
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return mostFirst(slices.Collect(maps.Values(byRelation)), 12), mostFirst(kinds, 24), nil
}

// mostFirst sorts rs by records, most first (then by name), and keeps the
// first limit.
func mostFirst(rs []walRelation, limit int) []walRelation {
	slices.SortFunc(rs, func(a, b walRelation) int {
		return cmp.Or(cmp.Compare(b.records, a.records), strings.Compare(a.name, b.name))
	})
	return rs[:min(len(rs), limit)]
}

// walRelation is the WAL one relation's blocks took during a drain.
type walRelation struct {
	name           string
	records, bytes int64
}

// relationsLine says per message which relations the WAL records went to.
func (p *walProbe) relationsLine(n int) string {
	if p.err != nil || len(p.relations) == 0 {
		return "WAL by relation: not measured"
	}
	parts := make([]string, len(p.relations))
	for i, r := range p.relations {
		parts[i] = fmt.Sprintf("%s %.2f (%.0f B)", r.name, float64(r.records)/float64(n), float64(r.bytes)/float64(n))
	}
	return "WAL records per message by relation: " + strings.Join(parts, ", ")
}

// kindsLine says per message which relations and record types the WAL
// records went to.
func (p *walProbe) kindsLine(n int) string {
	if p.err != nil || len(p.kinds) == 0 {
		return "WAL by relation and record type: not measured"
	}
	parts := make([]string, len(p.kinds))
	for i, r := range p.kinds {
		parts[i] = fmt.Sprintf("%s %.2f", r.name, float64(r.records)/float64(n))
	}
	return "WAL records per message by relation and record type: " + strings.Join(parts, ", ")
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
