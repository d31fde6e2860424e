package store_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// moveDay corrupts the ledger the way processing rules R5.5 guards against: the
// flight's row says another day while the old day's roster still lists it
// (data pollution; the trigger that keeps a day set once is bypassed).
func moveDay(t *testing.T, f *fixture, flid flight.FLID, day string) {
	t.Helper()
	for _, sql := range []string{
		`ALTER TABLE flight_schd DISABLE TRIGGER flight_schd_guard`,
		`UPDATE flight_schd SET operation_day = '` + day + `' WHERE flid = ` + flid.String(),
		`ALTER TABLE flight_schd ENABLE TRIGGER flight_schd_guard`,
	} {
		if _, err := f.conn.Exec(t.Context(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// processing rules R5.5: a diff-delete victim whose day is not the snapshot's is an
// assertion failure, not a filter: the whole snapshot is refused
// LEDGER_INCONSISTENT and nothing changes — no flight, roster, version or
// event; a victim that is gone already is skipped.
func TestLedgerInconsistentRefusesTheSnapshot(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.mustSnapshot(day9, rec(1, "CA1", day9), rec(2, "CA2", day9), rec(3, "CA3", day9))
	moveDay(t, f, 2, day10)
	if _, err := f.conn.Exec(t.Context(), `DELETE FROM flight_schd WHERE flid = 3`); err != nil {
		t.Fatal(err)
	}
	type ledger struct {
		Flights []flight.FLID
		Roster  []flight.FLID
		Version int64
		Events  int
	}
	now := func() ledger {
		var ids []flight.FLID
		for id := range f.flights() {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return ledger{ids, f.roster(day9), f.version(day9), f.count(`SELECT count(*) FROM msg_event`)}
	}
	before := now()

	_, err := f.snapshot(day9, rec(1, "CA1-NEW", day9))
	wantRejection(t, err, snapshot.ReasonLedgerInconsistent)
	if diff := cmp.Diff(before, now()); diff != "" {
		t.Fatalf("the refused snapshot changed something (-want +got):\n%s", diff)
	}
	if got := f.flights()[1].Scalars["FLNO"]; got != "CA1" {
		t.Fatalf("flight 1 FLNO %q after the refused snapshot", got)
	}

	// Once the roster no longer lists the flight of another day, the same
	// snapshot goes through and skips the victim that is gone.
	if _, err := f.conn.Exec(t.Context(), `DELETE FROM schd_gen_flid WHERE flid = 2`); err != nil {
		t.Fatal(err)
	}
	out := f.mustSnapshot(day9, rec(1, "CA1-NEW", day9))
	if len(out.Deleted) != 0 || !slices.Equal(f.roster(day9), fl(1)) || f.version(day9) != 2 {
		t.Fatalf("deleted %v roster %v version %d", out.Deleted, f.roster(day9), f.version(day9))
	}
	if _, ok := f.flights()[2]; !ok {
		t.Fatal("the flight of another day was deleted")
	}
}
