package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/snapshot"
	"github.com/flightfeed/flightfeed/internal/store"
)

// model is the seed's rules over plain maps: what the store must end up
// holding after any sequence of messages.
type model struct {
	flights map[flight.FLID]flight.State
	gens    map[string]*modelGen
}

type modelGen struct {
	version, lastMsg int64
	roster           []flight.FLID
}

func (m *model) stored() map[flight.FLID]string {
	out := map[flight.FLID]string{}
	for f, s := range m.flights {
		out[f] = s.OperationDay
	}
	return out
}

// snapshot returns the rejection reason, or "" when it applies.
func (m *model) snapshot(msgID int64, snap store.Snapshot) string {
	var records []snapshot.Record
	var flids []flight.FLID
	for _, r := range snap.Records {
		records = append(records, snapshot.Record{FLID: r.Cmds.FLID, Day: r.Day})
		flids = append(flids, r.Cmds.FLID)
	}
	g := m.gens[snap.Day]
	if snap.FullDay {
		if err := snapshot.CheckCoverage(snap.Day, records); err != nil {
			return snapshot.ReasonMixedDays
		}
		if g != nil && g.lastMsg == msgID {
			return ""
		}
	}
	for _, r := range records {
		if d, ok := m.stored()[r.FLID]; ok && d != "" && d != r.Day {
			return snapshot.ReasonDayMismatch
		}
	}
	for _, r := range snap.Records {
		cur, ok := m.flights[r.Cmds.FLID]
		if !ok {
			cur = flight.NewState(r.Cmds.FLID)
		}
		next, _, err := flight.Apply(cur, r.Cmds)
		if err != nil {
			panic(err)
		}
		if snap.FullDay && next.OperationDay == "" {
			next.OperationDay = snap.Day
		}
		m.flights[r.Cmds.FLID] = next
	}
	if !snap.FullDay {
		return ""
	}
	if g == nil {
		g = &modelGen{}
		m.gens[snap.Day] = g
	}
	for _, v := range snapshot.DiffDelete(g.roster, flids) {
		if s, ok := m.flights[v]; ok && s.OperationDay == snap.Day {
			delete(m.flights, v)
		}
	}
	g.version++
	g.lastMsg = msgID
	g.roster = slices.Clone(flids)
	slices.Sort(g.roster)
	return ""
}

func (m *model) increment(records []flight.Commands) {
	for _, r := range records {
		cur, ok := m.flights[r.FLID]
		if !ok {
			cur = flight.NewState(r.FLID)
		}
		next, _, err := flight.Apply(cur, r)
		if err != nil {
			panic(err)
		}
		m.flights[r.FLID] = next
	}
}

func (m *model) fdel(flids []flight.FLID) {
	for _, f := range flids {
		delete(m.flights, f)
		for _, g := range m.gens {
			g.roster = slices.DeleteFunc(g.roster, func(x flight.FLID) bool { return x == f })
		}
	}
}

// gen draws random messages over a small world, so collisions (same FLID in
// two days, re-creation after delete, replays) are frequent.
type gen struct{ r *rand.Rand }

var days = []string{day9, day10}

func (g gen) flid() flight.FLID { return flight.FLID(1 + g.r.IntN(8)) }

func (g gen) cmds(flid flight.FLID, full bool) flight.Commands {
	var cmds []flight.Command
	maybe := func(p float64, c flight.Command) {
		if g.r.Float64() < p {
			cmds = append(cmds, c)
		}
	}
	maybe(0.6, flight.Command{Tag: "FLNO", Op: flight.OpSet, Value: fmt.Sprintf("CA%d", g.r.IntN(3))})
	maybe(0.4, flight.Command{Tag: "ESTT", Op: flight.OpSet, Value: fmt.Sprintf("09SEP26%02d00", 6+g.r.IntN(3))})
	if g.r.Float64() < 0.5 {
		n := g.r.IntN(3)
		if n == 0 {
			cmds = append(cmds, flight.Command{Tag: "GTDT", Op: flight.OpClear})
		} else {
			var items []flight.Item
			for i := range n {
				items = append(items, flight.Item{"GTNO": fmt.Sprint(i + 1), "GATE": fmt.Sprintf("G%d", g.r.IntN(3))})
			}
			cmds = append(cmds, flight.Command{Tag: "GTDT", Op: flight.OpReplace, Items: items})
		}
	}
	maybe(0.2, flight.Command{Tag: "ROUT", Op: flight.OpReplace, Items: []flight.Item{{"RTNO": "1", "APCD": "PEK"}}})
	maybe(0.2, flight.Command{Tag: "FDIV", Op: flight.OpSet, Anomaly: flight.Item{"DDES": "HKG", flight.TextKey: "wx"}})
	if !full {
		maybe(0.1, flight.Command{Tag: "FDIV", Op: flight.OpClear})
	}
	slices.SortStableFunc(cmds, func(a, b flight.Command) int { return flight.FieldOrder(a.Tag) - flight.FieldOrder(b.Tag) })
	cmds = slices.CompactFunc(cmds, func(a, b flight.Command) bool { return a.Tag == b.Tag })
	return flight.Commands{FLID: flid, Full: full, Cmds: cmds}
}

func (g gen) snapshot() store.Snapshot {
	day := days[g.r.IntN(2)]
	snap := store.Snapshot{FullDay: g.r.Float64() < 0.75, Day: day}
	seen := map[flight.FLID]bool{}
	for range g.r.IntN(5) {
		f := g.flid()
		if seen[f] {
			continue
		}
		seen[f] = true
		recDay := day
		if g.r.Float64() < 0.1 {
			recDay = days[g.r.IntN(2)]
		}
		snap.Records = append(snap.Records, store.SnapshotRecord{Cmds: g.cmds(f, true), Day: recDay})
	}
	if !snap.FullDay {
		snap.Day = ""
	}
	return snap
}

func TestStoreMatchesModel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seen := map[string]int{}
	defer func() {
		// The generator must reach every rule, or passing proves little.
		for _, k := range []string{"full-day", "window", "replay", "diff-delete", snapshot.ReasonDayMismatch,
			snapshot.ReasonMixedDays, "fdel-existing", "fdel-missing", "increment-new"} {
			if seen[k] == 0 {
				t.Errorf("no sequence exercised %s (seen %v)", k, seen)
			}
		}
	}()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			if _, err := f.conn.Exec(t.Context(), `TRUNCATE flight_gate, flight_checkin, flight_belt, flight_stand_plan,
				flight_chute, flight_delay, flight_bridge_op, flight_chock_op, flight_route_point, schd_gen_flid, schd_gen,
				msg_event, flight_schd`); err != nil {
				t.Fatal(err)
			}
			runSequence(t, f, seed, seen)
		})
	}
}

func runSequence(t *testing.T, f *fixture, seed uint64, seen map[string]int) {
	g := gen{rand.New(rand.NewPCG(seed, 42))}
	m := &model{flights: map[flight.FLID]flight.State{}, gens: map[string]*modelGen{}}
	lastVersion := map[flight.FLID]int64{}
	var lastSnapshot struct {
		meta store.Meta
		snap store.Snapshot
	}
	for step := range 60 {
		var what string
		var err error
		switch p := g.r.Float64(); {
		case p < 0.35:
			meta, snap := f.nextMeta("SCHD", "RESP"), g.snapshot()
			if lastSnapshot.snap.FullDay && g.r.Float64() < 0.15 {
				meta, snap = lastSnapshot.meta, lastSnapshot.snap // a replay
				seen["replay"]++
			}
			before := len(m.flights)
			what = fmt.Sprintf("snapshot full=%v day=%s records=%d msg=%d", snap.FullDay, snap.Day, len(snap.Records), meta.MessageID)
			want := m.snapshot(meta.MessageID, snap)
			err = f.inTx(func(tx *store.Tx) error {
				_, err := tx.ApplySnapshot(t.Context(), meta, snap)
				return err
			})
			var rej *snapshot.Rejection
			switch {
			case errors.As(err, &rej) && rej.Reason == want:
				err = nil
			case err == nil && want != "":
				err = fmt.Errorf("store applied what the model rejects (%s)", want)
			}
			if err == nil && want == "" {
				lastSnapshot.meta, lastSnapshot.snap = meta, snap
				seen[map[bool]string{true: "full-day", false: "window"}[snap.FullDay]]++
				if len(m.flights) < before {
					seen["diff-delete"]++
				}
			}
			if want != "" {
				seen[want]++
			}
		case p < 0.75:
			var records []flight.Commands
			for range 1 + g.r.IntN(2) {
				records = append(records, g.cmds(g.flid(), false))
			}
			what = fmt.Sprintf("increment %d records", len(records))
			if _, ok := m.flights[records[0].FLID]; !ok {
				seen["increment-new"]++
			}
			m.increment(records)
			_, err = f.increment("FLOP", records...)
		default:
			flids := []flight.FLID{g.flid()}
			what = fmt.Sprintf("FDEL %v", flids)
			if _, ok := m.flights[flids[0]]; ok {
				seen["fdel-existing"]++
			} else {
				seen["fdel-missing"]++
			}
			m.fdel(flids)
			_, err = f.fdel(flids...)
		}
		if err != nil {
			t.Fatalf("step %d (%s): %v", step, what, err)
		}
		checkAgainstModel(t, f, m, lastVersion, fmt.Sprintf("step %d (%s)", step, what))
	}
}

func checkAgainstModel(t *testing.T, f *fixture, m *model, lastVersion map[flight.FLID]int64, where string) {
	t.Helper()
	ctx := context.Background()
	got := f.flights()
	norm := func(in map[flight.FLID]flight.State) map[flight.FLID]flight.State {
		out := map[flight.FLID]flight.State{}
		for k, s := range in {
			s = s.Clone()
			s.StateVersion, s.UpdatedAt, s.LastMessageID = 0, time.Time{}, 0
			for tag, items := range s.Lists {
				if len(items) == 0 {
					delete(s.Lists, tag)
				}
			}
			out[k] = s
		}
		return out
	}
	if diff := cmp.Diff(norm(m.flights), norm(got)); diff != "" {
		t.Fatalf("%s: state differs from the model (-model +store):\n%s", where, diff)
	}
	ledger, err := f.store.Ledger(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inRoster := map[flight.FLID]string{}
	for _, d := range ledger {
		mg := m.gens[d.Day]
		if mg == nil || mg.version != d.Version {
			t.Fatalf("%s: ledger %s version %d, model %+v", where, d.Day, d.Version, mg)
		}
		roster := f.roster(d.Day)
		if !slices.Equal(roster, mg.roster) {
			t.Fatalf("%s: roster %s = %v, model %v", where, d.Day, roster, mg.roster)
		}
		for _, r := range roster {
			if other, dup := inRoster[r]; dup {
				t.Fatalf("%s: FLID %s in the rosters of %s and %s", where, r, other, d.Day)
			}
			inRoster[r] = d.Day
			if s, ok := got[r]; ok && s.OperationDay != d.Day {
				t.Fatalf("%s: roster %s holds FLID %s of day %q", where, d.Day, r, s.OperationDay)
			}
		}
	}
	// state_version strictly rises per FLID, across delete and re-create.
	rows, err := f.conn.Query(ctx, `SELECT flid, state_version FROM msg_event_record WHERE kind = 'KAFKA_SCHD' AND id > $1 ORDER BY id`, lastVersion[0])
	if err != nil {
		t.Fatal(err)
	}
	type ev struct{ FLID, Version int64 }
	evs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ev])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Version <= lastVersion[flight.FLID(e.FLID)] {
			t.Fatalf("%s: FLID %d version %d after %d", where, e.FLID, e.Version, lastVersion[flight.FLID(e.FLID)])
		}
		lastVersion[flight.FLID(e.FLID)] = e.Version
	}
	// Every flight's current state was queued for Kafka: its newest state
	// event carries its state_version (a lost event would leave an older one).
	rows, err = f.conn.Query(ctx, `SELECT flid, max(state_version) FROM msg_event_record WHERE kind = 'KAFKA_SCHD' GROUP BY flid`)
	if err != nil {
		t.Fatal(err)
	}
	newest, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ev])
	if err != nil {
		t.Fatal(err)
	}
	queued := map[flight.FLID]int64{}
	for _, e := range newest {
		queued[flight.FLID(e.FLID)] = e.Version
	}
	for flid, s := range got {
		if queued[flid] != s.StateVersion {
			t.Fatalf("%s: FLID %s is at version %d, its newest state event at %d", where, flid, s.StateVersion, queued[flid])
		}
	}
	var maxID int64
	if err := f.conn.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM msg_event`).Scan(&maxID); err != nil {
		t.Fatal(err)
	}
	lastVersion[0] = maxID // FLID 0 is never drawn; it remembers the scan position
	for _, c := range []string{"flight_gate", "flight_route_point", "flight_delay"} {
		if n := f.count(`SELECT count(*) FROM ` + c + ` c WHERE NOT EXISTS (SELECT 1 FROM flight_schd s WHERE s.flid = c.flid)`); n != 0 {
			t.Fatalf("%s: %d orphan rows in %s", where, n, c)
		}
	}
}
