package pumptest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// What the real store keeps of days (internal/store pump_snapshot.go and
// pump_lifecycle.go), in memory: the day ledger and its roster, and the
// lifecycle jobs. A snapshot is decided by the planner the real store
// calls (engine.PlanSnapshot, then the plan's Merge, Stamp, Upserts and
// Tombstones); what is here is what the real store does in SQL: reading
// the plan's facts and writing the plan.

// ApplySnapshot applies a snapshot as the real store does (processing rules
// R5.1): it reads the snapshot's facts (the day's ledger and roster, the
// stored days), has engine.PlanSnapshot decide, and writes the plan: the
// merged flights with fresh versions and their outbox rows, the victims
// with their tombstones, and for a full-day one the roster replace and the
// compare-and-set on the day's version. A decided refusal is a
// *snapshot.Rejection.
func (t *tx) ApplySnapshot(_ context.Context, meta engine.Meta, snap pumpdata.Snapshot) (pumpdata.SnapshotEffect, error) {
	unlock := t.lock()
	err := t.s.fail("snapshot", meta.MessageID)
	unlock()
	if err != nil {
		return pumpdata.SnapshotEffect{}, err
	}
	out, err := t.applySnapshot(meta, snap)
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

func (t *tx) applySnapshot(meta engine.Meta, snap pumpdata.Snapshot) (pumpdata.SnapshotEffect, error) {
	records := snap.Records
	if snap.Source != nil {
		var err error
		if records, err = snap.Source.Chunk(0, snap.Source.Len()); err != nil {
			return pumpdata.SnapshotEffect{}, fmt.Errorf("records 1–%d: %w", snap.Source.Len(), err)
		}
	}
	plan, err := engine.PlanSnapshot(t.snapshotFacts(meta, snap, records))
	out := pumpdata.PlannedEffect(plan)
	if err != nil || plan.Replay {
		return out, err
	}

	cmds := make([]flight.Commands, len(records))
	current := map[flight.FLID]flight.State{}
	for i, r := range records {
		cmds[i] = r.Cmds
		if s, ok := t.d.Flights[r.Cmds.FLID]; ok {
			current[r.Cmds.FLID] = s
		}
	}
	writes, unchanged, err := plan.Merge(cmds, current)
	if err != nil {
		return out, err
	}
	out.Unchanged, out.Upserted = unchanged, len(writes)
	unlock := t.lock()
	versions := t.s.takeVersions(len(writes))
	now := t.s.now()
	unlock()
	out.Versions = engine.Stamp(writes, versions, meta, now)
	events, err := engine.Upserts(writes, meta)
	if err != nil {
		return out, err
	}
	for _, w := range writes {
		t.d.Flights[w.Next.FLID] = w.Next
		t.dirty.flights[w.Next.FLID] = true
	}
	t.d.Outbox = append(t.d.Outbox, events...)

	deleted, err := t.remove(meta, plan.Victims)
	if err != nil {
		return out, err
	}
	maps.Copy(out.Versions, deleted)
	out.Deleted = plan.VictimIDs()
	l := plan.Ledger
	if l == nil {
		return out, nil
	}

	// The compare-and-set on the day's version: another transaction that
	// committed the day since this one began wins.
	unlock = t.lock()
	base, had := t.root().days[l.Day]
	committed, has := t.s.d.Days[l.Day]
	unlock()
	if had != has || base.Version != committed.Version {
		return out, pumpdata.ErrConflict
	}
	t.d.Days[l.Day] = Day{Version: l.Version, LastMessageID: meta.MessageID, LastReceivedAt: meta.ReceivedAt,
		LastSentAt: snap.SentAt, LastCommitAt: now, Roster: slices.Sorted(slices.Values(l.Roster))}
	t.dirty.days[l.Day] = true
	out.NewVersion = l.Version
	return out, nil
}

// snapshotFacts is what the real store reads for engine.PlanSnapshot: the
// records' FLIDs and days, for a full-day snapshot the day's ledger and
// roster, and the stored days of the records' and the roster's flights.
func (t *tx) snapshotFacts(meta engine.Meta, snap pumpdata.Snapshot, records []pumpdata.SnapshotRecord) engine.SnapshotFacts {
	f := engine.SnapshotFacts{Meta: meta, FullDay: snap.FullDay, Day: snap.Day, SkipConflicts: snap.SkipConflicts, Keep: snap.Keep,
		Records: make([]snapshot.Record, len(records)), Stored: map[flight.FLID]string{}}
	for i, r := range records {
		f.Records[i] = snapshot.Record{FLID: r.Cmds.FLID, Day: r.Day}
	}
	if day, ok := t.d.Days[snap.Day]; ok && snap.FullDay {
		f.Ledger = engine.DayLedger{Exists: true, Version: day.Version, LastMessageID: day.LastMessageID,
			LastReceivedAt: day.LastReceivedAt, LastSentAt: day.LastSentAt}
		f.Roster = slices.Clone(day.Roster)
	}
	for _, r := range f.Records {
		t.storedDay(f.Stored, r.FLID)
	}
	for _, id := range f.Roster {
		t.storedDay(f.Stored, id)
	}
	return f
}

// storedDay adds flid's operation day to stored when the flight exists
// ("" for a flight without one).
func (t *tx) storedDay(stored map[flight.FLID]string, flid flight.FLID) {
	if s, ok := t.d.Flights[flid]; ok {
		stored[flid] = s.OperationDay
	}
}

// root is the outermost transaction of t.
func (t *tx) root() *tx {
	for t.parent != nil {
		t = t.parent
	}
	return t
}

// remove deletes flights from current state and from every roster, each
// with its tombstone (published under the state's day) at a fresh version,
// as the real store's deleteFlights does.
func (t *tx) remove(meta engine.Meta, gone []flight.State) (map[flight.FLID]int64, error) {
	unlock := t.lock()
	versions := t.s.takeVersions(len(gone))
	unlock()
	events, assigned, err := engine.Tombstones(gone, versions, meta)
	if err != nil {
		return nil, err
	}
	flids := make([]flight.FLID, len(gone))
	for i, s := range gone {
		flids[i] = s.FLID
		delete(t.d.Flights, s.FLID)
		t.dirty.flights[s.FLID] = true
	}
	t.leaveRosters(flids)
	t.d.Outbox = append(t.d.Outbox, events...)
	return assigned, nil
}

// leaveRosters takes flids out of every day's roster: a flight leaves its
// roster when it leaves current state, however it leaves.
func (t *tx) leaveRosters(flids []flight.FLID) {
	if len(flids) == 0 {
		return
	}
	for name, d := range t.d.Days {
		kept := slices.DeleteFunc(slices.Clone(d.Roster), func(f flight.FLID) bool { return slices.Contains(flids, f) })
		if len(kept) != len(d.Roster) {
			d.Roster = kept
			t.d.Days[name] = d
			t.dirty.days[name] = true
		}
	}
}

// Sweep runs one lifecycle job as the real store does: History and
// NullDayBefore move up to Limit flights, lowest FLID first, to History
// and delete them from current state with a tombstone each; LedgerBefore
// deletes the ledger days before it that nothing holds (Held).
func (t *tx) Sweep(_ context.Context, meta engine.Meta, job pump.Job) (pump.Swept, error) {
	if err := job.Check(); err != nil {
		return pump.Swept{}, err
	}
	if job.LedgerBefore != "" {
		return pump.Swept{Days: t.pruneLedger(job.LedgerBefore)}, nil
	}
	reasons := map[flight.FLID]string{}
	if job.History != nil {
		var err error
		if reasons, err = finished(t.d.Flights, *job.History); err != nil {
			return pump.Swept{}, err
		}
	} else {
		for f, s := range t.d.Flights {
			if s.OperationDay == "" && s.UpdatedAt.Before(job.NullDayBefore) {
				reasons[f] = pumpdata.HistoryNullDay
			}
		}
	}
	flids := slices.Sorted(maps.Keys(reasons))
	flids = flids[:min(len(flids), job.Limit)]
	if len(flids) == 0 {
		return pump.Swept{}, nil
	}
	unlock := t.lock()
	now := t.s.now()
	unlock()
	gone := make([]flight.State, len(flids))
	for i, f := range flids {
		gone[i] = t.d.Flights[f]
		t.d.History = append(t.d.History, HistoryRow{State: gone[i], Reason: reasons[f], ArchivedAt: now})
	}
	if _, err := t.remove(meta, gone); err != nil {
		return pump.Swept{}, err
	}
	return pump.Swept{Flights: len(gone)}, nil
}

// finished names the flights the history rules (pumpdata.HistoryCutoffs)
// say are finished, each with the first rule that holds: SODT, CNCL, NAAT,
// NEAT. Times are read in c.Zone, the airport's zone.
func finished(flights map[flight.FLID]flight.State, c pumpdata.HistoryCutoffs) (map[flight.FLID]string, error) {
	loc, err := time.LoadLocation(c.Zone)
	if err != nil {
		return nil, fmt.Errorf("select finished flights: %w", err)
	}
	at := func(s flight.State, tag string) (time.Time, bool) {
		v, ok := s.Scalars[tag]
		if !ok || v == "" {
			return time.Time{}, false
		}
		t, err := flight.ParseSISTime(v, loc)
		return t, err == nil
	}
	out := map[flight.FLID]string{}
	for f, s := range flights {
		sodt, hasSODT := at(s, "SODT") // zero when absent: later() then gives the day end
		var dayStart time.Time
		switch {
		case s.OperationDay != "":
			if dayStart, err = time.ParseInLocation(time.DateOnly, s.OperationDay, loc); err != nil {
				return nil, fmt.Errorf("flight %s: operation day: %w", f, err)
			}
		case hasSODT:
			y, m, d := sodt.In(loc).Date()
			dayStart = time.Date(y, m, d, 0, 0, 0, 0, loc)
		default:
			continue // neither anchor: never history by these rules
		}
		dayEnd := dayStart.AddDate(0, 0, 1)
		later := func(t time.Time) time.Time {
			if t.After(dayEnd) {
				return t
			}
			return dayEnd
		}
		// holds: the rule's time is plausible (within c.Plausible of the
		// day end) and the later of it and the day end is before cut.
		holds := func(cut time.Time, tag string) bool {
			t, ok := at(s, tag)
			if cut.IsZero() || !ok {
				return false
			}
			if d := t.Sub(dayEnd); c.Plausible > 0 && (d > c.Plausible || -d > c.Plausible) {
				return false
			}
			return later(t).Before(cut)
		}
		// SODT drives no plausibility check, and a flight without one is
		// anchored on its day end alone.
		scheduled := !c.Scheduled.IsZero() && later(sodt).Before(c.Scheduled)
		switch {
		case scheduled:
			out[f] = pumpdata.HistoryScheduled
		case holds(c.Cancelled, "CNCL"):
			out[f] = pumpdata.HistoryCancelled
		case holds(c.Departed, "NAAT"):
			out[f] = pumpdata.HistoryDeparted
		case holds(c.Arrived, "NEAT"):
			out[f] = pumpdata.HistoryArrived
		}
	}
	return out, nil
}

// pruneLedger deletes the ledger days before cutoff that nothing holds
// (Held) and returns them, ascending.
func (t *tx) pruneLedger(cutoff string) []string {
	var pruned []string
	for _, day := range slices.Sorted(maps.Keys(t.d.Days)) {
		if day >= cutoff {
			break
		}
		if t.held(day) == "" {
			delete(t.d.Days, day)
			t.dirty.days[day] = true
			pruned = append(pruned, day)
		}
	}
	return pruned
}

// held says what keeps day in the ledger past retention (processing rules R8.3),
// as the real store's first reason ("" when nothing does): a flight of
// the day still in current state; a snapshot message (or one of unknown
// type) that concerns the day — its trace rows name the day, or name none
// — and is PENDING or FAILED, or waits for its write-back.
func (t *tx) held(day string) string {
	for _, s := range t.d.Flights {
		if s.OperationDay == day {
			return "FLIGHTS_CURRENT: flights of the day are still in current state (not yet moved to history)"
		}
	}
	unlock := t.lock()
	traced := map[int64][]string{}
	for _, e := range t.s.traces {
		if e.Day != "" {
			traced[e.MessageID] = append(traced[e.MessageID], e.Day)
		}
	}
	unlock()
	concerns := func(id int64) bool {
		typ := t.d.Results[id].Type
		days := traced[id]
		return (typ == "" || typ == "SCHD") && (len(days) == 0 || slices.Contains(days, day))
	}
	for _, id := range slices.Sorted(maps.Keys(t.d.States)) {
		st := t.d.States[id]
		if (st.Status == "PENDING" || st.Status == pumpdata.StatusFailed) && concerns(id) {
			held := fmt.Sprintf("MESSAGE_UNFINISHED: message %d is %s", id, st.Status)
			if st.Reason != "" {
				held += " (" + st.Reason + ")"
			}
			return held
		}
	}
	for _, id := range slices.Sorted(maps.Keys(t.d.Backfills)) {
		if _, known := t.d.States[id]; known && concerns(id) {
			return fmt.Sprintf("BACKFILL_PENDING: message %d (%s) is not yet written back to the mailbox", id, t.d.States[id].Status)
		}
	}
	return ""
}
