package pumpdata

import (
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// Snapshot is a decoded schedule snapshot (DNLD/RESP) ready to apply.
type Snapshot struct {
	// FullDay: the snapshot covers one complete operation day, Day; it sets
	// the day of its flights, replaces the day's roster, diff-deletes and
	// advances the day's version. Otherwise it is a window: per-record
	// full-field upserts only (processing rules R10.5).
	FullDay bool
	Day     string
	Records []SnapshotRecord
	// Source, when set, gives the records instead of Records: a large
	// snapshot's are decoded a chunk at a time (RecordSource).
	Source RecordSource
	// SentAt is the message's META send time; a full-day snapshot records
	// it as the day's last (zero: unknown).
	SentAt time.Time
	// SkipConflicts (a confirmed skip-conflicts replay, processing rules R10.8): records
	// whose FLID belongs to another operation day are left out of the
	// roster and untouched (SnapshotEffect.Skipped) instead of refusing the
	// whole message.
	SkipConflicts bool
	// Keep are the FLIDs of records the decoder refused and left out (a
	// skip-conflicts replay, sis.Options.SkipRefusedRecords): their flights
	// stay untouched — not written, not diff-deleted, and in the day's
	// roster if they were in it.
	Keep []flight.FLID
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
	// was written (processing rules R5.1 step 2).
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

// RecordSource gives a snapshot's records to ApplySnapshot: every record's
// FLID and operation day up front, for the decisions that precede any write,
// and the records themselves a chunk at a time, so a large snapshot's
// decoded commands need not all be in memory at once.
type RecordSource interface {
	// Len is the number of records.
	Len() int
	// Key returns record i's FLID and operation day.
	Key(i int) (flight.FLID, string)
	// Chunk returns records lo..hi-1 in full, in order.
	Chunk(lo, hi int) ([]SnapshotRecord, error)
}

// PlannedEffect is what a snapshot's plan reports before anything of it is
// written: the replay, the day's old version, the roster digests and sizes,
// the previous send time and the skipped FLIDs. The backend that writes the
// plan adds the counts, the versions, the deleted flights and the new version
// as it writes them.
func PlannedEffect(p engine.SnapshotPlan) SnapshotEffect {
	out := SnapshotEffect{Replay: p.Replay, OldVersion: p.OldVersion, OldDigest: p.OldDigest, NewDigest: p.NewDigest,
		OldRoster: p.OldRoster, NewRoster: p.NewRoster, PrevSentAt: p.PrevSentAt, Skipped: p.Skipped}
	if p.Replay {
		out.NewVersion = p.OldVersion
	}
	return out
}
