package store_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// processing rules R8.1, rule by rule, through SweepHistory and SweepNullDay on
// PostgreSQL. Now is 2026-09-12 12:00 in Shanghai; scheduledAge is 240 h
// (so the SODT rule only decides the SODT cases) and the CNCL, NAAT and
// NEAT ages are 24 h. Every rule is anchored on the end of the flight's
// operation day (or, without one, of its SODT's airport-local day): a
// flight becomes history only when that day is over and the later of the
// day's end and the rule's time is older than the rule's age. Cases marked
// "anchored" are history by their own instant alone and stay only because
// of the anchor.
func TestHistoryRulesOnTheOperationDay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	set := func(tag, v string) flight.Command { return flight.Command{Tag: tag, Op: flight.OpSet, Value: v} }
	type flightCase struct {
		flid  flight.FLID
		day   string // "" = never in a full-day snapshot (NULL day)
		cmds  []flight.Command
		want  string // history reason, "" = stays
		about string
	}
	cases := []flightCase{
		{1, "2026-08-30", []flight.Command{set("SODT", "30AUG260800")}, store.HistoryScheduled, "SODT day over more than 240 h ago"},
		{2, "2026-09-02", []flight.Command{set("SODT", "02SEP261000")}, "", "anchored: SODT 242 h ago, its day over only 228 h ago"},
		{3, "2026-09-10", []flight.Command{set("SODT", "10SEP260800"), set("CNCL", "09SEP260900")}, store.HistoryCancelled, "cancelled the day before a day over 36 h ago"},
		{4, "2026-09-13", []flight.Command{set("SODT", "13SEP260800"), set("CNCL", "08SEP260900")}, "", "anchored: cancelled 4 days ago for tomorrow"},
		{5, "2026-09-10", []flight.Command{set("SODT", "10SEP262300"), set("CNCL", "11SEP261300")}, "", "cancelled 23 h ago, after its day"},
		{6, "2026-09-10", []flight.Command{set("SODT", "10SEP260800"), set("NAAT", "10SEP261000")}, store.HistoryDeparted, "departed on a day over 36 h ago"},
		{7, "2026-09-11", []flight.Command{set("SODT", "11SEP260030"), set("NAAT", "11SEP260040")}, "", "anchored: departed 35 h ago, its day over 12 h ago"},
		{8, "2026-09-10", []flight.Command{set("SODT", "10SEP260800"), set("NEAT", "10SEP261100")}, store.HistoryArrived, "arrived on a day over 36 h ago"},
		{9, "2026-09-11", []flight.Command{set("SODT", "11SEP260030"), set("NEAT", "11SEP260100")}, "", "anchored: arrived 35 h ago, its day over 12 h ago"},
		{10, "", []flight.Command{set("SODT", "10SEP261000"), set("CNCL", "09SEP260900")}, store.HistoryCancelled, "NULL day: anchored on its SODT's day"},
		{11, "", []flight.Command{set("SODT", "12SEP262200"), set("NAAT", "10SEP260900")}, "", "anchored: NULL day, SODT today"},
		{12, "", []flight.Command{set("CNCL", "01SEP260900")}, "", "anchored: neither day nor SODT — left to NULL-day retention"},
	}
	byDay := map[string][]store.SnapshotRecord{}
	for _, c := range cases {
		cmds := append([]flight.Command{set("FLNO", "CA"+c.flid.String())}, c.cmds...)
		slices.SortFunc(cmds, func(a, b flight.Command) int { return flight.FieldOrder(a.Tag) - flight.FieldOrder(b.Tag) })
		byDay[c.day] = append(byDay[c.day], store.SnapshotRecord{Cmds: flight.Commands{FLID: c.flid, Full: true, Cmds: cmds}, Day: c.day})
	}
	for _, day := range slices.Sorted(maps.Keys(byDay)) {
		if err := f.inTx(func(tx *store.Tx) error {
			_, err := tx.ApplySnapshot(t.Context(), f.nextMeta("SCHD", "RESP"), store.Snapshot{FullDay: day != "", Day: day, Records: byDay[day]})
			return err
		}); err != nil {
			t.Fatalf("snapshot of %q: %v", day, err)
		}
	}

	now := time.Date(2026, 9, 12, 12, 0, 0, 0, shanghai)
	cut := store.HistoryCutoffs{Scheduled: now.Add(-240 * time.Hour), Cancelled: now.Add(-24 * time.Hour),
		Departed: now.Add(-24 * time.Hour), Arrived: now.Add(-24 * time.Hour), Zone: "Asia/Shanghai", Plausible: 8760 * time.Hour}
	if err := f.inTx(func(tx *store.Tx) error {
		_, err := tx.SweepHistory(context.Background(), store.Meta{Type: "JOB", Styp: "HISTORY_SWEEP"}, cut, 100)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want, got := map[flight.FLID]string{}, f.historyReasons()
	for _, c := range cases {
		if c.want != "" {
			want[c.flid] = c.want
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		for _, c := range cases {
			if want[c.flid] != got[c.flid] {
				t.Errorf("flight %d (%s, %s): history %q, want %q", c.flid, c.day, c.about, got[c.flid], c.want)
			}
		}
		t.Fatalf("history reasons (-want +got):\n%s", diff)
	}
	current := f.flights()
	for _, c := range cases {
		if _, stays := current[c.flid]; stays == (c.want != "") {
			t.Errorf("flight %d (%s): in current state %v, want %v", c.flid, c.about, stays, c.want == "")
		}
	}
	if tombstones := f.count(`SELECT count(*) FROM msg_event WHERE event = 'DELETE'`); tombstones != len(want) {
		t.Fatalf("%d tombstones for %d flights moved to history", tombstones, len(want))
	}
}

// processing rules R8.3: a flight that no full-day snapshot ever included (NULL
// day) and that saw no update for the retention period goes to history
// (NULL_DAY_RETENTION); one updated since, or one with a day, stays.
func TestNullDayRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	set := func(tag, v string) flight.Command { return flight.Command{Tag: tag, Op: flight.OpSet, Value: v} }
	f.mustSnapshot(day9, rec(1, "CA1", day9))
	window := []store.SnapshotRecord{
		{Cmds: flight.Commands{FLID: 2, Full: true, Cmds: []flight.Command{set("FLNO", "CA2")}}},
		{Cmds: flight.Commands{FLID: 3, Full: true, Cmds: []flight.Command{set("FLNO", "CA3")}}},
	}
	if err := f.inTx(func(tx *store.Tx) error {
		_, err := tx.ApplySnapshot(t.Context(), f.nextMeta("SCHD", "DNLD"), store.Snapshot{Records: window})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-7 * 24 * time.Hour)
	// Age flights 1 and 2 (the guard trigger wants a new version on every
	// update of a flight; this only moves its last update back).
	for _, sql := range []string{`ALTER TABLE flight_schd DISABLE TRIGGER flight_schd_guard`,
		`UPDATE flight_schd SET updated_at = $1::timestamptz WHERE flid IN (1, 2)`, `ALTER TABLE flight_schd ENABLE TRIGGER flight_schd_guard`} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, before.Add(-time.Hour))
		}
		if _, err := f.conn.Exec(t.Context(), sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := f.inTx(func(tx *store.Tx) error {
		_, err := tx.SweepNullDay(context.Background(), store.Meta{Type: "JOB", Styp: "NULL_DAY_RETENTION"}, before, 100)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[flight.FLID]string{2: store.HistoryNullDay}, f.historyReasons()); diff != "" {
		t.Fatalf("history reasons (-want +got):\n%s", diff)
	}
	if current := f.flights(); len(current) != 2 || current[1].FLID != 1 || current[3].FLID != 3 {
		t.Fatalf("current state after NULL-day retention: %v", slices.Sorted(maps.Keys(current)))
	}
}

func (f *fixture) historyReasons() map[flight.FLID]string {
	f.t.Helper()
	rows, err := f.conn.Query(context.Background(), `SELECT flid, reason FROM flight_history`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	out := map[flight.FLID]string{}
	for rows.Next() {
		var id int64
		var reason string
		if err := rows.Scan(&id, &reason); err != nil {
			f.t.Fatal(err)
		}
		out[flight.FLID(id)] = reason
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}
