package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// Snapshot is a decoded schedule snapshot (DNLD/RESP) ready to apply.
type Snapshot = pumpdata.Snapshot

// SnapshotRecord is one FLTR record: full-snapshot commands and the
// record's own operation day (from SODT).
type SnapshotRecord = pumpdata.SnapshotRecord

// SnapshotEffect reports what a snapshot did, for the trace log.
type SnapshotEffect = pumpdata.SnapshotEffect

// ApplySnapshot applies a snapshot in the caller's transaction, exactly as
// processing rules R5.1: it reads what the decision needs (snapshotFacts), has the
// engine plan it (engine.PlanSnapshot: replay short-circuit, coverage and
// owner checks, diff-delete with its day assertion, roster, CAS), and
// writes the plan: full-field merges a chunk at a time, the victims, the
// roster replace and the CAS on the day's version, with their events. A
// decided refusal is a *snapshot.Rejection and leaves nothing written; the
// caller rolls back to its savepoint and records the terminal state.
func (t *Tx) ApplySnapshot(ctx context.Context, meta Meta, snap Snapshot) (SnapshotEffect, error) {
	out, err := t.applySnapshot(ctx, meta, snap)
	if err != nil {
		var rej *snapshot.Rejection
		if errors.As(err, &rej) {
			return out, err
		}
		what := "window snapshot"
		if snap.Day != "" {
			what = "snapshot of " + snap.Day
		}
		return out, fmt.Errorf("apply %s, message %d: %w", what, meta.MessageID, err)
	}
	return out, nil
}

func (t *Tx) applySnapshot(ctx context.Context, meta Meta, snap Snapshot) (SnapshotEffect, error) {
	src := recordsOf(snap)
	facts, err := t.snapshotFacts(ctx, meta, snap, src)
	if err != nil {
		return SnapshotEffect{}, err
	}
	plan, err := engine.PlanSnapshot(facts)
	out := pumpdata.PlannedEffect(plan)
	if err != nil || plan.Replay {
		return out, err
	}
	// Only the records' flights that exist are loaded (none of a new
	// day's); the rest of facts is not used again, and the collector frees
	// its records during the chunks (Go's liveness analysis).
	out.Versions = make(map[flight.FLID]int64, src.Len()+len(plan.Victims))
	if err := t.applySnapshotChunks(ctx, meta, src, plan, facts.Stored, &out); err != nil {
		return out, err
	}
	out.Deleted = plan.VictimIDs()

	b := &pgx.Batch{}
	deleted, err := t.deleteFlights(ctx, b, meta, plan.Victims)
	if err != nil {
		return out, err
	}
	maps.Copy(out.Versions, deleted)
	l := plan.Ledger
	if l == nil {
		return out, t.sendBatch(ctx, b)
	}
	// Roster replace, by the difference the plan computed against the
	// roster it read under the day's lock: the diff-deleted left it in
	// writeFlights; the rest of O − N (already gone) leaves here; N − O
	// joins. The flights in both are not written.
	if len(l.Leave) > 0 {
		b.Queue(`DELETE FROM schd_gen_flid WHERE operation_day = $1 AND flid IN (SELECT unnest($2::bigint[]))`, l.Day, flidArgs(l.Leave))
	}
	sent := nullTime(snap.SentAt)
	if l.Create {
		b.Queue(`INSERT INTO schd_gen (operation_day, version, last_message_id, last_recv_at, last_msg_received_at, last_sent_at)
			VALUES ($1, $6, $2, $3, $4, $5)
			ON CONFLICT (operation_day) DO NOTHING`, l.Day, meta.MessageID, t.now, meta.ReceivedAt, sent, l.Version)
	} else {
		b.Queue(`UPDATE schd_gen SET version = $7, last_message_id = $2, last_recv_at = $3, last_msg_received_at = $5,
				last_sent_at = $6
			WHERE operation_day = $1 AND version = $4`, l.Day, meta.MessageID, t.now, l.Expect, meta.ReceivedAt, sent, l.Version)
	}
	casIndex := b.Len() - 1
	if len(l.Join) > 0 {
		b.Queue(joinRosterSQL, l.Day, flidArgs(firstOfEach(l.Join)))
	}
	if err := t.sendBatchCAS(ctx, b, casIndex); err != nil {
		return out, err
	}
	out.NewVersion = l.Version
	return out, nil
}

// joinRosterSQL adds flights to a day's roster, in the order given, but
// not a flight some day's roster already holds (schd_gen_flid_one_day):
// what ON CONFLICT DO NOTHING did, without its speculative insertion, which
// writes a second WAL record for each row (the insert's confirmation) and
// made the statement the largest of a new day's first snapshot after its
// chunks (10,000 rows). The flights must be distinct (firstOfEach): the
// check does not see the statement's own rows. Every write transaction
// holds the writer's lock (store Begin), so no other one adds roster rows
// meanwhile.
const joinRosterSQL = `INSERT INTO schd_gen_flid (operation_day, flid)
	SELECT $1, j.flid FROM unnest($2::bigint[]) WITH ORDINALITY AS j(flid, n)
	WHERE NOT EXISTS (SELECT 1 FROM schd_gen_flid r WHERE r.flid = j.flid)
	ORDER BY j.n`

// firstOfEach is flids without repeats, each at its first place (flids
// itself when it has none).
func firstOfEach(flids []flight.FLID) []flight.FLID {
	seen := make(map[flight.FLID]struct{}, len(flids))
	for i, f := range flids {
		if _, ok := seen[f]; ok {
			out := slices.Clone(flids[:i])
			for _, f := range flids[i:] {
				if _, ok := seen[f]; !ok {
					seen[f] = struct{}{}
					out = append(out, f)
				}
			}
			return out
		}
		seen[f] = struct{}{}
	}
	return flids
}

// snapshotFacts reads what engine.PlanSnapshot decides a snapshot from:
// its records' FLIDs and days (without their commands, which are read a
// chunk at a time later), for a full-day one the day's ledger row (locked)
// and roster, and the stored days of the records' and the roster's
// flights (not their whole states).
func (t *Tx) snapshotFacts(ctx context.Context, meta Meta, snap Snapshot, src RecordSource) (engine.SnapshotFacts, error) {
	f := engine.SnapshotFacts{Meta: meta, FullDay: snap.FullDay, Day: snap.Day, SkipConflicts: snap.SkipConflicts, Keep: snap.Keep}
	n := src.Len()
	f.Records = make([]snapshot.Record, n)
	flids := make([]flight.FLID, n)
	for i := range n {
		flid, day := src.Key(i)
		f.Records[i] = snapshot.Record{FLID: flid, Day: day}
		flids[i] = flid
	}
	if snap.FullDay {
		var err error
		if f.Ledger, err = t.dayLedger(ctx, snap.Day); err != nil {
			return f, err
		}
		if f.Roster, err = t.roster(ctx, snap.Day); err != nil {
			return f, err
		}
	}
	// Each flight once: the roster mostly repeats the records.
	flids = append(flids, f.Roster...)
	slices.Sort(flids)
	var err error
	f.Stored, err = t.storedDays(ctx, slices.Compact(flids))
	return f, err
}

// dayLedger reads day's ledger row and locks it for the transaction.
func (t *Tx) dayLedger(ctx context.Context, day string) (engine.DayLedger, error) {
	var l engine.DayLedger
	var lastRecv, lastSent *time.Time
	err := t.tx.QueryRow(ctx, `SELECT version, last_message_id, last_msg_received_at, last_sent_at FROM schd_gen WHERE operation_day = $1 FOR UPDATE`,
		day).Scan(&l.Version, &l.LastMessageID, &lastRecv, &lastSent)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return l, nil
	case err != nil:
		return l, fmt.Errorf("read ledger: %w", err)
	}
	l.Exists = true
	if lastRecv != nil {
		l.LastReceivedAt = *lastRecv
	}
	if lastSent != nil {
		l.LastSentAt = *lastSent
	}
	return l, nil
}

// roster reads day's roster (schd_gen_flid).
func (t *Tx) roster(ctx context.Context, day string) ([]flight.FLID, error) {
	rows, err := t.tx.Query(ctx, `SELECT flid FROM schd_gen_flid WHERE operation_day = $1`, day)
	if err != nil {
		return nil, fmt.Errorf("read roster: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read roster: %w", err)
	}
	roster := make([]flight.FLID, len(ids))
	for i, id := range ids {
		roster[i] = flight.FLID(id) //nolint:gosec // checked column
	}
	return roster, nil
}

// snapshotChunk is how many of a snapshot's records are merged and written
// at a time: their commands, stored and merged states, rows and events,
// for two chunks at most (pump_snapshot_chunks.go), are what a snapshot
// holds in memory at once, whatever its size. A variable so tests can cut
// small snapshots into several chunks.
var snapshotChunk = 1000

// RecordSource gives a snapshot's records to ApplySnapshot: every record's
// FLID and operation day up front, for the decisions that precede any write,
// and the records themselves a chunk at a time, so a large snapshot's
// decoded commands need not all be in memory at once.
type RecordSource = pumpdata.RecordSource

// recordsOf is the snapshot's RecordSource: Source, or Records.
func recordsOf(s Snapshot) RecordSource {
	if s.Source != nil {
		return s.Source
	}
	return recordSlice(s.Records)
}

// recordSlice is a RecordSource over records held in memory.
type recordSlice []SnapshotRecord

func (r recordSlice) Len() int { return len(r) }

func (r recordSlice) Key(i int) (flight.FLID, string) { return r[i].Cmds.FLID, r[i].Day }

func (r recordSlice) Chunk(lo, hi int) ([]SnapshotRecord, error) { return r[lo:hi], nil }

// storedDays returns the operation day of each of flids that exists ("" for
// a flight without one): what the owner and diff-delete checks need, without
// loading whole states.
func (t *Tx) storedDays(ctx context.Context, flids []flight.FLID) (map[flight.FLID]string, error) {
	out := make(map[flight.FLID]string, len(flids))
	if len(flids) == 0 {
		return out, nil
	}
	ids := make([]int64, len(flids))
	for i, f := range flids {
		ids[i] = int64(f) //nolint:gosec // at most 12 digits
	}
	rows, err := t.tx.Query(ctx, `SELECT flid, coalesce(operation_day::text, '') FROM flight_schd WHERE `+flidIn, ids)
	if err != nil {
		return nil, fmt.Errorf("read stored days: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f int64
		var day string
		if err := rows.Scan(&f, &day); err != nil {
			return nil, fmt.Errorf("read stored days: %w", err)
		}
		out[flight.FLID(f)] = day //nolint:gosec // checked column
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stored days: %w", err)
	}
	return out, nil
}

// sendBatchCAS is sendBatch that also requires statement casIndex to have
// changed exactly one row.
func (t *Tx) sendBatchCAS(ctx context.Context, b *pgx.Batch, casIndex int) error {
	br := t.tx.SendBatch(ctx, b)
	for i := range b.Len() {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return fmt.Errorf("statement %d of %d: %w", i+1, b.Len(), err)
		}
		if i == casIndex && tag.RowsAffected() != 1 {
			_ = br.Close()
			return ErrConflict
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("close batch: %w", err)
	}
	return nil
}

// flidArgs is flids as a bigint[] argument.
func flidArgs(flids []flight.FLID) []int64 {
	ids := make([]int64, len(flids))
	for i, f := range flids {
		ids[i] = int64(f) //nolint:gosec // at most 12 digits
	}
	return ids
}
