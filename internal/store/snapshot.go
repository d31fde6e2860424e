package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// Snapshot is a decoded schedule snapshot (DNLD/RESP) ready to apply.
type Snapshot struct {
	// FullDay: the snapshot covers one complete operation day, Day; it sets
	// the day of its flights, replaces the day's roster, diff-deletes and
	// advances the day's version. Otherwise it is a window: per-record
	// full-field upserts only (SPEC §2.5).
	FullDay bool
	Day     string
	Records []SnapshotRecord
	// SentAt is the message's META send time; a full-day snapshot records
	// it as the day's last (zero: unknown).
	SentAt time.Time
	// SkipConflicts (a confirmed skip-conflicts replay, SPEC §2.8): records
	// whose FLID belongs to another operation day are left out of the
	// roster and untouched (SnapshotEffect.Skipped) instead of refusing the
	// whole message.
	SkipConflicts bool
}

// SnapshotRecord is one FLTR record: full-snapshot commands and the
// record's own operation day (from SODT).
type SnapshotRecord struct {
	Cmds flight.Commands
	Day  string
}

// SnapshotEffect reports what a snapshot did, for the trace log.
type SnapshotEffect struct {
	// Replay: the message is the day's last committed snapshot; nothing
	// was written (seed 000 §5.1 step 2).
	Replay                 bool
	OldVersion, NewVersion int64
	Upserted, Unchanged    int
	Deleted                []flight.FLID
	OldDigest, NewDigest   string
	// OldRoster and NewRoster are the sizes of the day's roster before and
	// after a full-day snapshot (RECS_DROP); PrevSentAt the send time of
	// the day's previous committed snapshot, zero when unknown
	// (OUT_OF_ORDER).
	OldRoster, NewRoster int
	PrevSentAt           time.Time
	Versions             map[flight.FLID]int64
	// Skipped lists the conflicting FLIDs a SkipConflicts snapshot left out.
	Skipped []flight.FLID
}

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
	records := make([]snapshot.Record, len(snap.Records))
	flids := make([]flight.FLID, len(snap.Records))
	for i, r := range snap.Records {
		if !r.Cmds.Full {
			return out, fmt.Errorf("flight %s: snapshot records carry full-snapshot commands", r.Cmds.FLID)
		}
		records[i] = snapshot.Record{FLID: r.Cmds.FLID, Day: r.Day}
		flids[i] = r.Cmds.FLID
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

	candidates := snapshot.DiffDelete(roster, flids)
	current, err := t.loadByFLID(ctx, append(append([]flight.FLID{}, flids...), candidates...))
	if err != nil {
		return out, err
	}
	stored := make(map[flight.FLID]string, len(current))
	for f, s := range current {
		stored[f] = s.OperationDay
	}
	if err := snapshot.CheckOwners(records, stored); err != nil {
		var rej *snapshot.Rejection
		if !snap.SkipConflicts || !errors.As(err, &rej) || rej.Reason != snapshot.ReasonDayMismatch {
			return out, err
		}
		snap.Records, flids, candidates = withoutFLIDs(snap.Records, flids, candidates, rej.FLIDs)
		out.Skipped = rej.FLIDs
		if snap.FullDay {
			out.NewDigest, out.NewRoster = snapshot.Digest(flids), len(flids)
		}
	}
	victimIDs, err := snapshot.Victims(snap.Day, candidates, stored)
	if err != nil {
		return out, err
	}

	// The merges are pure and independent: a large snapshot spreads them
	// over the cores, then they are taken in record order.
	type merged struct {
		w       stateWrite
		changed bool
		err     error
	}
	merges := make([]merged, len(snap.Records))
	inParallel(len(snap.Records), func(i int) {
		r := snap.Records[i]
		cur, exists := current[r.Cmds.FLID]
		merges[i].w, merges[i].changed, merges[i].err = mergeOne(cur, exists, r.Cmds)
	})
	var writes []stateWrite
	for i, r := range snap.Records {
		cur, exists := current[r.Cmds.FLID]
		w, changed, err := merges[i].w, merges[i].changed, merges[i].err
		if err != nil {
			return out, err
		}
		if snap.FullDay && (!exists || cur.OperationDay == "") {
			// The full-day snapshot sets the day once (seed 000 §5.3).
			if !changed {
				w = stateWrite{next: cur.Clone()}
			}
			w.next.OperationDay = snap.Day
			w.changed = append(w.changed, flight.KeyOperationDay)
			w.isNew = !exists
			changed = true
		}
		if !changed {
			out.Unchanged++
			continue
		}
		writes = append(writes, w)
	}
	out.Upserted = len(writes)
	victims := make([]flight.State, len(victimIDs))
	for i, f := range victimIDs {
		victims[i] = current[f]
	}
	out.Deleted = victimIDs

	b := &pgx.Batch{}
	out.Versions, err = t.writeFlights(ctx, b, meta, writes, victims)
	if err != nil {
		return out, err
	}
	if snap.FullDay {
		// Roster replace: the diff-deleted left it in writeFlights; the rest of
		// O − N (already gone) leaves here; N − O joins.
		ids := make([]int64, len(flids))
		for i, f := range flids {
			ids[i] = int64(f) //nolint:gosec // at most 12 digits
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

// withoutFLIDs drops skip from a snapshot's records, FLIDs and diff-delete
// candidates (a skip-conflicts replay leaves them untouched).
func withoutFLIDs(recs []SnapshotRecord, flids, candidates, skip []flight.FLID) ([]SnapshotRecord, []flight.FLID, []flight.FLID) {
	drop := make(map[flight.FLID]bool, len(skip))
	for _, f := range skip {
		drop[f] = true
	}
	keepRecs := make([]SnapshotRecord, 0, len(recs))
	keepFLIDs := make([]flight.FLID, 0, len(flids))
	for i, r := range recs {
		if !drop[r.Cmds.FLID] {
			keepRecs = append(keepRecs, r)
			keepFLIDs = append(keepFLIDs, flids[i])
		}
	}
	var keepCands []flight.FLID
	for _, f := range candidates {
		if !drop[f] {
			keepCands = append(keepCands, f)
		}
	}
	return keepRecs, keepFLIDs, keepCands
}
