package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/snapshot"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

const (
	day9  = "2026-09-09"
	day10 = "2026-09-10"
)

func fl(ids ...flight.FLID) []flight.FLID { return ids }

// processing rules R3.1: the same FLNO on two days is two instances; a day's
// snapshot deletes only its own; a FLID in another day's snapshot is a
// protocol error.
func TestSeed000IdentityTable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const old, other = 121112312, 121119845

	f.mustSnapshot(day9, rec(old, "CA100", day9))
	f.mustSnapshot(day10, rec(other, "CA100", day10))
	got := f.flights()
	if got[old].OperationDay != day9 || got[other].OperationDay != day10 {
		t.Fatalf("days: %s=%q %s=%q", flight.FLID(old), got[old].OperationDay, flight.FLID(other), got[other].OperationDay)
	}

	// A 9/10 snapshot that wrongly holds the 9/9 instance is refused whole.
	before := f.count(`SELECT count(*) FROM msg_event`)
	_, err := f.snapshot(day10, rec(other, "CA100", day10), rec(old, "CA100", day10))
	wantRejection(t, err, snapshot.ReasonDayMismatch)
	type seen struct {
		OldDay     string
		Day10Gen   int64
		EventCount int
	}
	if diff := cmp.Diff(seen{day9, 1, before}, seen{f.flights()[old].OperationDay, f.version(day10), f.count(`SELECT count(*) FROM msg_event`)}); diff != "" {
		t.Fatalf("the refused snapshot changed something (-want +got):\n%s", diff)
	}

	// A new 9/9 snapshot without the old instance deletes it, and only it.
	out := f.mustSnapshot(day9)
	if !slices.Equal(out.Deleted, fl(old)) {
		t.Fatalf("9/9 diff-delete = %v, want [%d]", out.Deleted, old)
	}
	f.mustSnapshot(day10, rec(other, "CA100", day10))
	got = f.flights()
	if _, ok := got[old]; ok {
		t.Fatal("9/9 instance survived its day's empty snapshot")
	}
	if got[other].OperationDay != day10 {
		t.Fatal("9/10 instance was touched by the 9/9 diff-delete")
	}
}

// processing rules R4 with R5.3: steps 1, 2 and 5 as the table says;
// step 3 (9/10 snapshot with C, which belongs to 9/9) is DEAD(PROTOCOL) and
// changes nothing, so step 4 deletes C as a 9/9 flight.
func TestSeed001LedgerExample(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const a, b, c = 1001, 1002, 1003

	// 1. M1: 9/9 {A, B}.
	out := f.mustSnapshot(day9, rec(a, "CA1", day9), rec(b, "CA2", day9))
	if f.version(day9) != 1 || !slices.Equal(f.roster(day9), fl(a, b)) || out.OldVersion != 0 || out.NewVersion != 1 {
		t.Fatalf("step 1: version %d roster %v", f.version(day9), f.roster(day9))
	}
	// 2. M2: 9/9 {A, C}: B deleted with a tombstone, C created.
	out = f.mustSnapshot(day9, rec(a, "CA1", day9), rec(c, "CA3", day9))
	m2 := f.msgID
	if f.version(day9) != 2 || !slices.Equal(f.roster(day9), fl(a, c)) || !slices.Equal(out.Deleted, fl(b)) {
		t.Fatalf("step 2: version %d roster %v deleted %v", f.version(day9), f.roster(day9), out.Deleted)
	}
	ev := f.events(m2)
	if !slices.Equal(flidsOf(ev, store.KindState, store.EventDelete), fl(b)) ||
		!slices.Equal(flidsOf(ev, store.KindState, store.EventUpsert), fl(c)) {
		t.Fatalf("step 2 events: %+v", ev)
	}
	for _, e := range ev {
		if e.Event == store.EventDelete {
			doc := decodeJSON(t, e.Payload)
			if doc["DELETED"] != true || doc["FLID"] != "1002" || int64(doc["STATE_VERSION"].(float64)) != e.Version {
				t.Fatalf("tombstone %s", e.Payload)
			}
		}
	}
	if _, ok := f.flights()[b]; ok || f.count(`SELECT count(*) FROM flight_schd WHERE flid = $1`, b) != 0 {
		t.Fatal("B still exists")
	}

	// 3. M3: 9/10 {C}: C belongs to 9/9 → DEAD(PROTOCOL), nothing written.
	_, err := f.snapshot(day10, rec(c, "CA3", day10))
	wantRejection(t, err, snapshot.ReasonDayMismatch)
	type step3 struct {
		Day10Gen    int64
		CDay        string
		Day10Roster int
	}
	if diff := cmp.Diff(step3{0, day9, 0}, step3{f.version(day10), f.flights()[c].OperationDay, len(f.roster(day10))}); diff != "" {
		t.Fatalf("step 3 changed state (-want +got):\n%s", diff)
	}

	// 4. M4: 9/9 {A}: C is still 9/9's, so it is diff-deleted.
	meta4 := store.Meta{MessageID: 404, Type: "SCHD", Styp: "RESP"}
	out, err = f.snapshotAs(meta4, day9, rec(a, "CA1", day9))
	if err != nil || f.version(day9) != 3 || !slices.Equal(out.Deleted, fl(c)) || !slices.Equal(f.roster(day9), fl(a)) {
		t.Fatalf("step 4: %v version %d deleted %v roster %v", err, f.version(day9), out.Deleted, f.roster(day9))
	}
	events := f.count(`SELECT count(*) FROM msg_event`)

	// 5. M4 again: replay short-circuit, nothing written.
	out, err = f.snapshotAs(meta4, day9, rec(a, "CA1", day9))
	if err != nil || !out.Replay || f.version(day9) != 3 || f.count(`SELECT count(*) FROM msg_event`) != events {
		t.Fatalf("step 5: %v replay=%v version %d", err, out.Replay, f.version(day9))
	}
}

// processing rules R5.1: generation 7 of 9/9 is {CA100, CZ300}; the DNLD {CA100,
// MU201} deletes CZ300, updates CA100, creates MU201 and makes version 8.
func TestSeed001DNLDExample(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const ca100, mu201, cz300 = 100, 201, 300
	gate := func(g string) flight.Command {
		return flight.Command{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"GTNO": "1", "GATE": g}}}
	}
	f.mustSnapshot(day9, rec(ca100, "CA100", day9, gate("G28")), rec(cz300, "CZ300", day9))
	if _, err := f.conn.Exec(t.Context(), `UPDATE schd_gen SET version = 7 WHERE operation_day = $1`, day9); err != nil {
		t.Fatal(err)
	}

	out := f.mustSnapshot(day9, rec(ca100, "CA100", day9, gate("A1")), rec(mu201, "MU201", day9))
	if out.OldVersion != 7 || out.NewVersion != 8 || f.version(day9) != 8 {
		t.Fatalf("version %d → %d, ledger %d", out.OldVersion, out.NewVersion, f.version(day9))
	}
	if !slices.Equal(out.Deleted, fl(cz300)) || !slices.Equal(f.roster(day9), fl(ca100, mu201)) {
		t.Fatalf("deleted %v roster %v", out.Deleted, f.roster(day9))
	}
	got := f.flights()
	if g := got[ca100].Lists["GTDT"]; len(g) != 1 || g[0]["GATE"] != "A1" {
		t.Fatalf("CA100 gates %v", g)
	}
	if got[mu201].OperationDay != day9 || got[mu201].Scalars["FLNO"] != "MU201" {
		t.Fatalf("MU201 %+v", got[mu201])
	}
	type rows struct{ Gates, Schd int }
	if diff := cmp.Diff(rows{}, rows{f.count(`SELECT count(*) FROM flight_gate WHERE flid = $1`, cz300), f.count(`SELECT count(*) FROM flight_schd WHERE flid = $1`, cz300)}); diff != "" {
		t.Fatalf("CZ300 rows left (-want +got):\n%s", diff)
	}
	ev := f.events(f.msgID)
	if !slices.Equal(flidsOf(ev, store.KindState, store.EventUpsert), fl(ca100, mu201)) ||
		!slices.Equal(flidsOf(ev, store.KindState, store.EventDelete), fl(cz300)) ||
		!slices.Equal(flidsOf(ev, store.KindNotice, store.EventNotice), fl(ca100, mu201, cz300)) {
		t.Fatalf("events %+v", ev)
	}
}

func TestSnapshotRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	// A full-day snapshot holding another day's record is refused.
	_, err := f.snapshot(day9, rec(1, "CA1", day9), store.SnapshotRecord{Cmds: rec(2, "CA2", day10).Cmds, Day: day10})
	wantRejection(t, err, snapshot.ReasonMixedDays)
	if f.count(`SELECT count(*) FROM flight_schd`) != 0 {
		t.Fatal("refused snapshot wrote flights")
	}

	// An unchanged flight gets no version and no event (no-op suppression).
	f.mustSnapshot(day9, rec(1, "CA1", day9), rec(2, "CA2", day9))
	v1 := f.flights()[1].StateVersion
	out := f.mustSnapshot(day9, rec(1, "CA1", day9), rec(2, "CA2-NEW", day9))
	if out.Unchanged != 1 || out.Upserted != 1 || f.flights()[1].StateVersion != v1 {
		t.Fatalf("unchanged %d upserted %d", out.Unchanged, out.Upserted)
	}
	if got := flidsOf(f.events(f.msgID), store.KindState, store.EventUpsert); !slices.Equal(got, fl(2)) {
		t.Fatalf("events for %v, want only the changed flight", got)
	}
	if f.version(day9) != 2 {
		t.Fatalf("version %d: a snapshot with unchanged flights still advances the day", f.version(day9))
	}

	// A full snapshot clears what it omits.
	f.mustSnapshot(day9, rec(1, "CA1", day9, flight.Command{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP260900"}))
	if f.flights()[1].Scalars["ESTT"] != "09SEP260900" {
		t.Fatal("ESTT not set")
	}
	f.mustSnapshot(day9, rec(1, "CA1", day9))
	if _, ok := f.flights()[1].Scalars["ESTT"]; ok {
		t.Fatal("ESTT survived a snapshot that omitted it")
	}
}

func TestWindowSnapshotOnlyUpserts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.mustSnapshot(day9, rec(1, "CA1", day9), rec(2, "CA2", day9))

	window := func(records ...store.SnapshotRecord) error {
		return f.inTx(func(tx *store.Tx) error {
			_, err := tx.ApplySnapshot(t.Context(), f.nextMeta("SCHD", "DNLD"), store.Snapshot{Records: records})
			return err
		})
	}
	// The window holds flight 1 (changed) and a new flight 3, not flight 2.
	if err := window(rec(1, "CA1-W", day9), rec(3, "CA3", day10)); err != nil {
		t.Fatal(err)
	}
	got := f.flights()
	if _, ok := got[2]; !ok {
		t.Fatal("a window diff-deleted flight 2")
	}
	if got[1].Scalars["FLNO"] != "CA1-W" || got[1].OperationDay != day9 {
		t.Fatalf("flight 1 %+v", got[1])
	}
	if got[3].OperationDay != "" {
		t.Fatalf("a window set flight 3's day to %q", got[3].OperationDay)
	}
	type gens struct {
		Day9Gen     int64
		Generations int
	}
	if diff := cmp.Diff(gens{1, 1}, gens{f.version(day9), f.count(`SELECT count(*) FROM schd_gen`)}); diff != "" {
		t.Fatalf("a window advanced a generation (-want +got):\n%s", diff)
	}
	// The owner check holds for windows too.
	wantRejection(t, window(rec(1, "CA1", day10)), snapshot.ReasonDayMismatch)
	// The next full-day snapshot of 9/10 sets flight 3's day.
	f.mustSnapshot(day10, rec(3, "CA3", day10))
	if f.flights()[3].OperationDay != day10 {
		t.Fatal("the full-day snapshot did not set the NULL day")
	}
}

func TestEmptySnapshotDeletesTheDaysRoster(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.mustSnapshot(day9, rec(1, "CA1", day9), rec(2, "CA2", day9))
	out := f.mustSnapshot(day9)
	if !slices.Equal(out.Deleted, fl(1, 2)) || len(f.roster(day9)) != 0 || f.version(day9) != 2 {
		t.Fatalf("deleted %v roster %v version %d", out.Deleted, f.roster(day9), f.version(day9))
	}
	if out.NewDigest == out.OldDigest || !strings.HasPrefix(out.OldDigest, snapshot.Digest(fl(1, 2))) {
		t.Fatalf("digests %q %q", out.OldDigest, out.NewDigest)
	}
}

func TestTraceLogIsAppendOnlyOutsideTheMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	// The message's transaction rolls back; its trace row stays.
	tx, err := f.store.Begin(ctx, f.epoch)
	if err != nil {
		t.Fatal(err)
	}
	entry := store.TraceEntry{Day: day9, MessageID: 7, ReceivedAt: time.Now(), Recs: 2, OldVersion: 3, NewVersion: 3,
		Result: store.TraceRolledBack, Flags: []string{"DAY_MISMATCH"}, Detail: "SAME_FLID_ACROSS_OPERATION_DAYS"}
	if err := f.store.AppendTraceLog(ctx, entry); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	entry.Result, entry.Flags = store.TraceReplaySkipped, nil
	if err := f.store.AppendTraceLog(ctx, entry); err != nil {
		t.Fatal(err)
	}
	if n := f.count(`SELECT count(*) FROM schd_snap_log WHERE msg_id = 7`); n != 2 {
		t.Fatalf("%d trace rows for two attempts of one message, want 2", n)
	}
	if n := f.count(`SELECT count(*) FROM schd_snap_log WHERE msg_id = 7 AND 'DAY_MISMATCH' = ANY(flags) AND result = 'ROLLED_BACK' AND archive_key = 7`); n != 1 {
		t.Fatal("flags, result or archive key not recorded")
	}
}

func TestStaleEpochCannotWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.store.TakeEpoch(ctx, "newer-pump"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Begin(ctx, f.epoch); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("begin with a superseded epoch: %v", err)
	}
}

// A transaction left idle (a frozen or cut-off pump) is ended by the
// server, releasing pipeline_lock so the next leader can take its epoch.
func TestIdleTransactionReleasesTheWriterLock(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.Options{IdleInTransactionTimeout: 300 * time.Millisecond})
	ctx := t.Context()
	tx, err := db.Store.Begin(ctx, db.Epoch) // holds pipeline_lock FOR UPDATE
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // "frozen" inside the transaction
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("a transaction idle past the timeout committed")
	}
	// The lock is free: a new leader takes its epoch at once.
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := db.Store.TakeEpoch(lctx, "next-leader"); err != nil {
		t.Fatalf("next leader could not take the epoch: %v", err)
	}
}
