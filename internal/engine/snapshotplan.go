package engine

import (
	"slices"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// SnapshotFacts are what a store read for one snapshot, in the transaction
// that applies it and under the day's lock: all PlanSnapshot decides from.
type SnapshotFacts struct {
	// Meta is the message (its id and received time are its identity for
	// the replay short-circuit).
	Meta Meta
	// FullDay: a snapshot of the whole operation day Day (it replaces the
	// day's roster, diff-deletes and advances the day's version);
	// otherwise a window (per-record upserts only, processing rules R10.5).
	FullDay bool
	Day     string
	// Records are the snapshot's records' FLIDs and days, in record order.
	Records []snapshot.Record
	// SkipConflicts and Keep are a skip-conflicts replay's (processing rules R10.8):
	// leave out records whose FLID belongs to another day instead of
	// refusing the message, and leave untouched the flights of the records
	// the decoder refused (Keep).
	SkipConflicts bool
	Keep          []flight.FLID
	// Ledger and Roster are the day's ledger row and roster (a full-day
	// snapshot's; a window's are not read).
	Ledger DayLedger
	Roster []flight.FLID
	// Stored maps each flight of the records and of the roster that exists
	// to its stored operation day ("" while NULL); a FLID absent from it
	// has no row.
	Stored map[flight.FLID]string
}

// DayLedger is one operation day's ledger row (schd_gen) as read.
type DayLedger struct {
	// Exists: the day has a row (it had a committed full-day snapshot).
	Exists        bool
	Version       int64
	LastMessageID int64
	// LastReceivedAt and LastSentAt are the received time and META send
	// time of the day's last committed snapshot; zero when not recorded.
	LastReceivedAt time.Time
	LastSentAt     time.Time
}

// SnapshotPlan is what a snapshot does, decided by PlanSnapshot: what the
// store writes (the merges of Merge, the victims, the ledger) and what it
// reports for the trace log and the alerts.
type SnapshotPlan struct {
	// Replay: the message is the day's last committed snapshot (processing rules
	// R5.1 step 2); nothing is written.
	Replay bool
	// OldVersion is the day's version before the snapshot; PrevSentAt the
	// send time of the day's last committed snapshot (zero when unknown).
	OldVersion int64
	PrevSentAt time.Time
	// OldDigest and NewDigest fingerprint the day's roster before and after
	// a full-day snapshot; OldRoster and NewRoster are their sizes.
	OldDigest, NewDigest string
	OldRoster, NewRoster int
	// Skipped are the records' FLIDs a skip-conflicts replay leaves out
	// (stored under another day), in record order; Merge leaves them out.
	Skipped []flight.FLID
	// Victims are the flights the diff-delete removes (processing rules R5.5), each
	// with its day: the day its tombstone is published under.
	Victims []flight.State
	// Ledger is a full-day snapshot's change to its day's ledger; nil for a
	// window or a replay.
	Ledger *LedgerWrite

	fullDay bool
	day     string
	skip    map[flight.FLID]bool
}

// LedgerWrite is a full-day snapshot's change to its day's ledger (processing rules
// R5.1 steps 8–9): the roster replaced, the version advanced by a
// compare-and-set.
type LedgerWrite struct {
	Day string
	// Roster is the day's roster after the snapshot: its records' FLIDs (less
	// those skipped), then the flights of the records the decoder refused
	// (Keep) that the roster held already.
	Roster []flight.FLID
	// Join and Leave are what changes in the day's roster as read (Facts'
	// Roster, under the day's lock): Roster's flights it does not hold, and
	// the ones it holds that Roster does not, in roster order. The store
	// writes only them: a day asked for again, mostly the same flights,
	// writes almost no roster rows.
	Join, Leave []flight.FLID
	// Create: the day has no ledger row; it is created at Version 1, and a
	// row that appeared meanwhile is a conflict. Otherwise the row moves from
	// version Expect to Version, and any other version is a conflict.
	Create          bool
	Expect, Version int64
}

// VictimIDs are the victims' FLIDs, in order.
func (p SnapshotPlan) VictimIDs() []flight.FLID {
	if len(p.Victims) == 0 {
		return nil
	}
	out := make([]flight.FLID, len(p.Victims))
	for i, v := range p.Victims {
		out[i] = v.FLID
	}
	return out
}

// PlanSnapshot decides a snapshot (processing rules R5.1–R5.5, R10.5) from
// what the store read: for a full-day one the coverage check, the replay
// short-circuit on the day's last message, the diff against the day's
// roster (less the refused records' flights, Keep); for every one the owner
// check (a FLID stored under another day refuses the whole message, or is
// skipped by a skip-conflicts replay); the diff-delete victims with their
// day assertion; and the roster and compare-and-set a full-day one writes.
//
// A refusal is a *snapshot.Rejection; the plan returned with it holds what
// was decided before it (the day's version, the roster digests), for the
// trace log. The records' merges are decided a chunk at a time by Merge.
func PlanSnapshot(f SnapshotFacts) (SnapshotPlan, error) {
	p := SnapshotPlan{fullDay: f.FullDay, day: f.Day}
	flids := make([]flight.FLID, len(f.Records))
	for i, r := range f.Records {
		flids[i] = r.FLID
	}
	var roster []flight.FLID
	if f.FullDay {
		if err := snapshot.CheckCoverage(f.Day, f.Records); err != nil {
			return p, err
		}
		l := f.Ledger
		if l.Exists {
			p.OldVersion, p.PrevSentAt = l.Version, l.LastSentAt
		}
		// The same message only when the received time matches too (a
		// ledger row from before it was recorded has none): mailbox ids can
		// restart.
		if l.Exists && l.LastMessageID == f.Meta.MessageID && (l.LastReceivedAt.IsZero() || l.LastReceivedAt.Equal(f.Meta.ReceivedAt)) {
			p.Replay = true
			return p, nil
		}
		roster = f.Roster
		p.OldDigest, p.OldRoster = snapshot.Digest(roster), len(roster)
	}

	// rostered are the refused records' flights (Keep) the roster holds:
	// they stay in it, untouched.
	candidates, rostered := snapshot.KeepRefused(snapshot.DiffDelete(roster, flids), roster, f.Keep)
	newRoster := func() {
		if f.FullDay {
			all := slices.Concat(flids, rostered)
			p.NewDigest, p.NewRoster = snapshot.Digest(all), len(all)
		}
	}
	if err := snapshot.CheckOwners(f.Records, f.Stored); err != nil {
		skip, skipped, err := snapshot.SkipDayMismatches(err, f.SkipConflicts)
		if err != nil {
			newRoster()
			return p, err
		}
		p.skip, p.Skipped = skip, skipped
		flids, candidates = snapshot.Without(flids, skip), snapshot.Without(candidates, skip)
	}
	newRoster()

	victims, err := snapshot.Victims(f.Day, candidates, f.Stored)
	if err != nil {
		return p, err
	}
	if len(victims) > 0 {
		p.Victims = make([]flight.State, len(victims))
		for i, v := range victims {
			p.Victims[i] = flight.State{FLID: v, OperationDay: f.Stored[v]}
		}
	}
	if f.FullDay {
		next := slices.Concat(flids, rostered)
		p.Ledger = &LedgerWrite{Day: f.Day, Roster: next, Join: snapshot.Missing(next, roster), Leave: snapshot.Missing(roster, next),
			Create: !f.Ledger.Exists, Expect: p.OldVersion, Version: p.OldVersion + 1}
	}
	return p, nil
}

// Merge decides the writes of some of the plan's records (a chunk of them,
// or all): records are their full-snapshot commands, in record order, and
// current the stored states of those that exist. The records the plan
// skips are left out; a full-day snapshot sets the day of every flight that
// has none (MergeSnapshot). It returns the writes of the changed flights
// and how many records changed nothing.
func (p SnapshotPlan) Merge(records []flight.Commands, current map[flight.FLID]flight.State) (writes []Write, unchanged int, err error) {
	if len(p.skip) > 0 {
		kept := make([]flight.Commands, 0, len(records))
		for _, r := range records {
			if !p.skip[r.FLID] {
				kept = append(kept, r)
			}
		}
		records = kept
	}
	return MergeSnapshot(records, current, p.fullDay, p.day)
}
