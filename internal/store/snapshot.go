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
// seed 000 §5.1: replay short-circuit, coverage and owner checks, diff set,
// full-field writes, diff-delete with its day assertion, roster replace, CAS
// on the day's version, events. A decided refusal is a *snapshot.Rejection
// and leaves nothing written; the caller rolls back to its savepoint and
// records the terminal state.
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
	var out SnapshotEffect
	src := recordsOf(snap)
	n := src.Len()
	// The decisions before any write need only the records' FLIDs and
	// days; their commands are read a chunk at a time below.
	records := make([]snapshot.Record, n)
	flids := make([]flight.FLID, n)
	for i := range n {
		f, day := src.Key(i)
		records[i] = snapshot.Record{FLID: f, Day: day}
		flids[i] = f
	}

	var (
		genExists bool
		roster    []flight.FLID
	)
	if snap.FullDay {
		if err := snapshot.CheckCoverage(snap.Day, records); err != nil {
			return out, err
		}
		var lastMsg int64
		var lastRecv, lastSent *time.Time
		err := t.tx.QueryRow(ctx, `SELECT version, last_message_id, last_msg_received_at, last_sent_at FROM schd_gen WHERE operation_day = $1 FOR UPDATE`,
			snap.Day).Scan(&out.OldVersion, &lastMsg, &lastRecv, &lastSent)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return out, fmt.Errorf("read ledger: %w", err)
		default:
			genExists = true
			if lastSent != nil {
				out.PrevSentAt = *lastSent
			}
		}
		// The same message only when the received time matches too (rows
		// from before it was recorded have none): mailbox ids can restart.
		if genExists && lastMsg == meta.MessageID && (lastRecv == nil || lastRecv.Equal(meta.ReceivedAt)) {
			out.Replay, out.NewVersion = true, out.OldVersion
			return out, nil
		}
		rows, err := t.tx.Query(ctx, `SELECT flid FROM schd_gen_flid WHERE operation_day = $1`, snap.Day)
		if err != nil {
			return out, fmt.Errorf("read roster: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return out, fmt.Errorf("read roster: %w", err)
		}
		for _, id := range ids {
			roster = append(roster, flight.FLID(id)) //nolint:gosec // checked column
		}
		out.OldDigest, out.NewDigest = snapshot.Digest(roster), snapshot.Digest(flids)
		out.OldRoster, out.NewRoster = len(roster), len(flids)
	}

	// rosterIDs is the day's roster after the snapshot beyond its records'
	// FLIDs: the refused records' flights (Keep) that were in it already.
	candidates, rosterIDs := snapshot.KeepRefused(snapshot.DiffDelete(roster, flids), roster, snap.Keep)
	if snap.FullDay && len(rosterIDs) > 0 {
		out.NewDigest, out.NewRoster = snapshot.Digest(append(slices.Clone(flids), rosterIDs...)), len(flids)+len(rosterIDs)
	}
	stored, err := t.storedDays(ctx, append(append([]flight.FLID{}, flids...), candidates...))
	if err != nil {
		return out, err
	}
	var skip map[flight.FLID]bool
	if err := snapshot.CheckOwners(records, stored); err != nil {
		if skip, out.Skipped, err = snapshot.SkipDayMismatches(err, snap.SkipConflicts); err != nil {
			return out, err
		}
		flids, candidates = snapshot.Without(flids, skip), snapshot.Without(candidates, skip)
		if snap.FullDay {
			out.NewDigest, out.NewRoster = snapshot.Digest(append(slices.Clone(flids), rosterIDs...)), len(flids)+len(rosterIDs)
		}
	}
	// records and, after the victims, stored are not used again: the
	// collector frees them during the chunks (Go's liveness analysis; no
	// nil assignment needed).
	victimIDs, err := snapshot.Victims(snap.Day, candidates, stored)
	if err != nil {
		return out, err
	}
	victims := make([]flight.State, len(victimIDs))
	for i, f := range victimIDs {
		victims[i] = flight.State{FLID: f, OperationDay: stored[f]}
	}

	out.Versions = make(map[flight.FLID]int64, len(flids)+len(victimIDs))
	for lo := 0; lo < n; lo += snapshotChunk {
		hi := min(lo+snapshotChunk, n)
		if err := t.applySnapshotChunk(ctx, meta, snap, src, lo, hi, skip, &out); err != nil {
			return out, err
		}
	}
	out.Deleted = victimIDs

	b := &pgx.Batch{}
	deleted, err := t.writeFlights(ctx, b, meta, nil, victims)
	if err != nil {
		return out, err
	}
	maps.Copy(out.Versions, deleted)
	if snap.FullDay {
		// Roster replace: the diff-deleted left it in writeFlights; the rest of
		// O − N (already gone) leaves here; N − O joins.
		ids := make([]int64, 0, len(flids)+len(rosterIDs))
		for _, f := range flids {
			ids = append(ids, int64(f)) //nolint:gosec // at most 12 digits
		}
		for _, f := range rosterIDs {
			ids = append(ids, int64(f)) //nolint:gosec // at most 12 digits
		}
		b.Queue(`DELETE FROM schd_gen_flid WHERE operation_day = $1 AND flid NOT IN (SELECT unnest($2::bigint[]))`, snap.Day, ids)
		sent := nullTime(snap.SentAt)
		if genExists {
			b.Queue(`UPDATE schd_gen SET version = version + 1, last_message_id = $2, last_recv_at = $3, last_msg_received_at = $5,
					last_sent_at = $6
				WHERE operation_day = $1 AND version = $4`, snap.Day, meta.MessageID, t.now, out.OldVersion, meta.ReceivedAt, sent)
		} else {
			b.Queue(`INSERT INTO schd_gen (operation_day, version, last_message_id, last_recv_at, last_msg_received_at, last_sent_at)
				VALUES ($1, 1, $2, $3, $4, $5)
				ON CONFLICT (operation_day) DO NOTHING`, snap.Day, meta.MessageID, t.now, meta.ReceivedAt, sent)
		}
		casIndex := b.Len() - 1
		b.Queue(`INSERT INTO schd_gen_flid (operation_day, flid) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING`, snap.Day, ids)
		if err := t.sendBatchCAS(ctx, b, casIndex); err != nil {
			return out, err
		}
		out.NewVersion = out.OldVersion + 1
		return out, nil
	}
	if err := t.sendBatch(ctx, b); err != nil {
		return out, err
	}
	return out, nil
}

// snapshotChunk is how many of a snapshot's records are merged and written
// at a time: their commands, stored and merged states, rows and events are
// what a snapshot holds in memory at once, whatever its size. A variable
// so tests can cut small snapshots into several chunks.
var snapshotChunk = 1000

// applySnapshotChunk merges and writes records lo..hi of a snapshot (those
// in skip left out): it loads their stored states, has the engine merge
// them, and writes the changed ones with their events, adding to out's
// counts and versions.
func (t *Tx) applySnapshotChunk(ctx context.Context, meta Meta, snap Snapshot, src RecordSource, lo, hi int,
	skip map[flight.FLID]bool, out *SnapshotEffect) error {
	recs, err := src.Chunk(lo, hi)
	if err != nil {
		return fmt.Errorf("records %d–%d: %w", lo+1, hi, err)
	}
	if len(recs) != hi-lo {
		return fmt.Errorf("records %d–%d: %d records read", lo+1, hi, len(recs))
	}
	if len(skip) > 0 {
		kept := recs[:0:0]
		for _, r := range recs {
			if !skip[r.Cmds.FLID] {
				kept = append(kept, r)
			}
		}
		recs = kept
	}
	ids := make([]flight.FLID, len(recs))
	cmds := make([]flight.Commands, len(recs))
	for i, r := range recs {
		ids[i], cmds[i] = r.Cmds.FLID, r.Cmds
	}
	current, err := t.loadByFLID(ctx, ids)
	if err != nil {
		return err
	}
	writes, unchanged, err := engine.MergeSnapshot(cmds, current, snap.FullDay, snap.Day)
	if err != nil {
		return err
	}
	out.Unchanged += unchanged
	out.Upserted += len(writes)
	b := &pgx.Batch{}
	versions, err := t.writeFlights(ctx, b, meta, writes, nil)
	if err != nil {
		return err
	}
	maps.Copy(out.Versions, versions)
	if err := t.sendBatch(ctx, b); err != nil {
		return err
	}
	return nil
}

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
