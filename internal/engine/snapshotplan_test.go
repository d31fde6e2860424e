package engine_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// The full-day snapshot examples (processing rules R5.1–R5.5, R4
// and R5.1) as tables of the planner: what the store read in, the plan it
// writes out. Where they disagree, R5.3 and R5.5 decide: a FLID stored
// under another day refuses the whole message, and a victim of another day
// (or of none) refuses it too instead of being kept silently. A refusal is
// a *snapshot.Rejection, which the pump records DEAD (class PROTOCOL) with
// its reason (pump.Classify), writing nothing of the plan.

const day10 = "2026-09-10"

// FLIDs of the examples: R4's example names them A, B, C; R5.1's CA100,
// MU201, CZ300 (AODB FLIDs that only look like flight numbers).
const (
	fA, fB, fC, fD   flight.FLID = 1, 2, 3, 4
	mu201, cz300     flight.FLID = 121112313, 121112314
	planMsg          int64       = 9001
	planReceivedDiff             = time.Minute
)

var planReceived = time.Date(2026, 9, 9, 1, 0, 0, 0, time.UTC)

// keys are snapshot records of day, one per FLID.
func keys(day string, flids ...flight.FLID) []snapshot.Record {
	out := make([]snapshot.Record, len(flids))
	for i, f := range flids {
		out[i] = snapshot.Record{FLID: f, Day: day}
	}
	return out
}

// fullDay are the facts of a full-day snapshot of day holding records,
// message planMsg, over a day whose ledger is at version (none at 0), last
// written by message 1, with roster; stored are the flights' stored days.
func fullDay(day string, records []snapshot.Record, version int64, roster []flight.FLID, stored map[flight.FLID]string) engine.SnapshotFacts {
	f := engine.SnapshotFacts{Meta: engine.Meta{MessageID: planMsg, ReceivedAt: planReceived}, FullDay: true, Day: day,
		Records: records, Roster: roster, Stored: stored}
	if version > 0 {
		f.Ledger = engine.DayLedger{Exists: true, Version: version, LastMessageID: 1, LastReceivedAt: planReceived.Add(-time.Hour)}
	}
	return f
}

// ledger is the ledger write of a full-day snapshot of day from version
// (0: a new day) with roster.
func ledger(day string, from int64, roster ...flight.FLID) *engine.LedgerWrite {
	return &engine.LedgerWrite{Day: day, Roster: roster, Create: from == 0, Expect: from, Version: from + 1}
}

// rostered fills a plan's roster report: old and new roster's digests and
// sizes.
func rostered(p engine.SnapshotPlan, old, current []flight.FLID) engine.SnapshotPlan {
	p.OldDigest, p.OldRoster = snapshot.Digest(old), len(old)
	p.NewDigest, p.NewRoster = snapshot.Digest(current), len(current)
	return p
}

func victims(day string, flids ...flight.FLID) []flight.State {
	out := make([]flight.State, len(flids))
	for i, f := range flids {
		out[i] = flight.State{FLID: f, OperationDay: day}
	}
	return out
}

func ids(flids ...flight.FLID) []flight.FLID { return flids }

func TestPlanSnapshot(t *testing.T) {
	t.Parallel()
	type want struct {
		plan engine.SnapshotPlan
		// reason and flids of the refusal, when refused.
		reason    string
		flids     []flight.FLID
		conflicts []snapshot.Conflict
	}
	cases := []struct {
		name  string
		facts engine.SnapshotFacts
		want  want
	}{
		// processing rules R5.1, "一次 DNLD 快照的落库": the day's generation is at
		// version 7 with {CA100, CZ300}; the snapshot holds {CA100, MU201}.
		{
			name: "R5.1 example: O − N = {CZ300} of the day is deleted, version 7 → 8, roster N",
			facts: fullDay(day9, keys(day9, ca100, mu201), 7, ids(ca100, cz300),
				map[flight.FLID]string{ca100: day9, cz300: day9}),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 7, Victims: victims(day9, cz300),
				Ledger: ledger(day9, 7, ca100, mu201)}, ids(ca100, cz300), ids(ca100, mu201))},
		},
		// processing rules R4, "同日替换与跨日保护", in order.
		{
			name:  "R4 example step 1: the day's first snapshot {A, B} creates its ledger at version 1",
			facts: fullDay(day9, keys(day9, fA, fB), 0, nil, nil),
			want:  want{plan: rostered(engine.SnapshotPlan{Ledger: ledger(day9, 0, fA, fB)}, nil, ids(fA, fB))},
		},
		{
			name: "R4 example step 2: {A, C} over {A, B}: B of the day is deleted, version 2",
			facts: fullDay(day9, keys(day9, fA, fC), 1, ids(fA, fB),
				map[flight.FLID]string{fA: day9, fB: day9}),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 1, Victims: victims(day9, fB),
				Ledger: ledger(day9, 1, fA, fC)}, ids(fA, fB), ids(fA, fC))},
		},
		{
			name: "R4 example step 3 as R5.3 rules: {C} of 9/10 while C belongs to 9/9 refuses the whole message",
			facts: fullDay(day10, keys(day10, fC), 0, nil,
				map[flight.FLID]string{fC: day9}),
			want: want{plan: rostered(engine.SnapshotPlan{}, nil, ids(fC)),
				reason: snapshot.ReasonDayMismatch, flids: ids(fC),
				conflicts: []snapshot.Conflict{{FLID: fC, StoredDay: day9, MessageDay: day10}}},
		},
		{
			name: "R4 example step 4 as R5.5 rules: a victim stored under another day is an assertion, not a filter",
			facts: fullDay(day9, keys(day9, fA), 2, ids(fA, fC),
				map[flight.FLID]string{fA: day9, fC: day10}),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 2}, ids(fA, fC), ids(fA)),
				reason: snapshot.ReasonLedgerInconsistent, flids: ids(fC)},
		},
		{
			name: "R4 example step 5, R5.1 step 2: the day's last message again is a replay: nothing planned",
			facts: func() engine.SnapshotFacts {
				f := fullDay(day9, keys(day9, fA), 3, ids(fA), map[flight.FLID]string{fA: day9})
				f.Ledger.LastMessageID, f.Ledger.LastReceivedAt = planMsg, planReceived
				f.Ledger.LastSentAt = planReceived.Add(-time.Hour)
				return f
			}(),
			want: want{plan: engine.SnapshotPlan{Replay: true, OldVersion: 3, PrevSentAt: planReceived.Add(-time.Hour)}},
		},
		{
			name: "a replay is known by its id alone when the ledger recorded no received time",
			facts: func() engine.SnapshotFacts {
				f := fullDay(day9, keys(day9, fA), 3, ids(fA), map[flight.FLID]string{fA: day9})
				f.Ledger.LastMessageID, f.Ledger.LastReceivedAt = planMsg, time.Time{}
				return f
			}(),
			want: want{plan: engine.SnapshotPlan{Replay: true, OldVersion: 3}},
		},
		{
			name: "the day's last message id received at another time is another message (ids restart)",
			facts: func() engine.SnapshotFacts {
				f := fullDay(day9, keys(day9, fA), 3, ids(fA, fB), map[flight.FLID]string{fA: day9, fB: day9})
				f.Ledger.LastMessageID, f.Ledger.LastReceivedAt = planMsg, planReceived.Add(planReceivedDiff)
				return f
			}(),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 3, Victims: victims(day9, fB),
				Ledger: ledger(day9, 3, fA)}, ids(fA, fB), ids(fA))},
		},
		// processing rules R5.5.
		{
			name: "R5.5: a victim without a day (NULL) is refused LEDGER_INCONSISTENT, not deleted",
			facts: fullDay(day9, keys(day9, fA), 1, ids(fA, fB),
				map[flight.FLID]string{fA: day9, fB: ""}),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 1}, ids(fA, fB), ids(fA)),
				reason: snapshot.ReasonLedgerInconsistent, flids: ids(fB)},
		},
		{
			name: "R5.5: a victim that no longer exists is skipped (deleted already, or an idempotent replay)",
			facts: fullDay(day9, keys(day9, fA), 1, ids(fA, fB, fC),
				map[flight.FLID]string{fA: day9, fC: day9}),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 1, Victims: victims(day9, fC),
				Ledger: ledger(day9, 1, fA)}, ids(fA, fB, fC), ids(fA))},
		},
		{
			name: "R5.5: the roster is the safety boundary: a flight of the day it does not list is not deleted",
			facts: fullDay(day9, keys(day9, fA), 1, ids(fA),
				map[flight.FLID]string{fA: day9, fD: day9}),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 1, Ledger: ledger(day9, 1, fA)}, ids(fA), ids(fA))},
		},
		{
			name: "R5.5: an empty snapshot (RECS=0) is committed and deletes the day's whole roster",
			facts: fullDay(day9, nil, 4, ids(fA, fB),
				map[flight.FLID]string{fA: day9, fB: day9}),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 4, Victims: victims(day9, fA, fB),
				Ledger: ledger(day9, 4)}, ids(fA, fB), nil)},
		},
		{
			name:  "R5.5: an empty snapshot of a day without a ledger deletes nothing and creates it",
			facts: fullDay(day9, nil, 0, nil, map[flight.FLID]string{fA: day9}),
			want:  want{plan: rostered(engine.SnapshotPlan{Ledger: ledger(day9, 0)}, nil, nil)},
		},
		// processing rules R5.2 and R5.3.
		{
			name:  "R5.2: a full-day snapshot holding a record of another day is refused before anything",
			facts: fullDay(day9, append(keys(day9, fA), keys(day10, fB)...), 1, ids(fA), map[flight.FLID]string{fA: day9}),
			want:  want{reason: snapshot.ReasonMixedDays, flids: ids(fB)},
		},
		{
			name: "R5.3: a flight stored without a day, or of the day, or new, is written; its day is set by the merge",
			facts: fullDay(day9, keys(day9, fA, fB, fC), 1, ids(fA),
				map[flight.FLID]string{fA: day9, fB: ""}),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 1, Ledger: ledger(day9, 1, fA, fB, fC)}, ids(fA), ids(fA, fB, fC))},
		},
		{
			name: "R5.3: the owner check keeps the ledger's version and the digests for the trace",
			facts: fullDay(day9, keys(day9, fA, fB, fC), 5, ids(fA, fD),
				map[flight.FLID]string{fA: day9, fB: day10, fC: "2026-09-08", fD: day9}),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 5}, ids(fA, fD), ids(fA, fB, fC)),
				reason: snapshot.ReasonDayMismatch, flids: ids(fB, fC),
				conflicts: []snapshot.Conflict{{FLID: fB, StoredDay: day10, MessageDay: day9}, {FLID: fC, StoredDay: "2026-09-08", MessageDay: day9}}},
		},
		// A confirmed skip-conflicts replay (processing rules R10.8) and the records the
		// decoder refused in it (Keep).
		{
			name: "skip-conflicts: the FLID of another day is left out of the roster and not written; the rest applies",
			facts: func() engine.SnapshotFacts {
				f := fullDay(day9, keys(day9, fA, fB), 1, ids(fA, fC), map[flight.FLID]string{fA: day9, fB: day10, fC: day9})
				f.SkipConflicts = true
				return f
			}(),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 1, Skipped: ids(fB), Victims: victims(day9, fC),
				Ledger: ledger(day9, 1, fA)}, ids(fA, fC), ids(fA))},
		},
		{
			name: "skip-conflicts does not cover a ledger inconsistency",
			facts: func() engine.SnapshotFacts {
				f := fullDay(day9, keys(day9, fA), 1, ids(fA, fC), map[flight.FLID]string{fA: day9, fC: day10})
				f.SkipConflicts = true
				return f
			}(),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 1}, ids(fA, fC), ids(fA)),
				reason: snapshot.ReasonLedgerInconsistent, flids: ids(fC)},
		},
		{
			name: "keep-refused: a refused record's flight the roster holds stays in it and is no victim",
			facts: func() engine.SnapshotFacts {
				f := fullDay(day9, keys(day9, fA), 1, ids(fA, fB, fC), map[flight.FLID]string{fA: day9, fB: day9, fC: day9})
				f.Keep = ids(fB, fD)
				return f
			}(),
			want: want{plan: rostered(engine.SnapshotPlan{OldVersion: 1, Victims: victims(day9, fC),
				Ledger: ledger(day9, 1, fA, fB)}, ids(fA, fB, fC), ids(fA, fB))},
		},
		// Windows (processing rules R10.5): no ledger, roster or diff-delete; the owner
		// check all the same.
		{
			name: "window: per-record upserts only, whatever the stored days of the flights",
			facts: engine.SnapshotFacts{Meta: engine.Meta{MessageID: planMsg}, Day: day9,
				Records: append(keys(day9, fA, fB), keys(day10, fC)...), Stored: map[flight.FLID]string{fA: day9, fB: ""}},
			want: want{plan: engine.SnapshotPlan{}},
		},
		{
			name: "window: a FLID stored under another day refuses the whole message",
			facts: engine.SnapshotFacts{Meta: engine.Meta{MessageID: planMsg},
				Records: append(keys(day9, fA), keys(day10, fB)...), Stored: map[flight.FLID]string{fA: day9, fB: day9}},
			want: want{reason: snapshot.ReasonDayMismatch, flids: ids(fB),
				conflicts: []snapshot.Conflict{{FLID: fB, StoredDay: day9, MessageDay: day10}}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			plan, err := engine.PlanSnapshot(c.facts)
			var rej *snapshot.Rejection
			switch {
			case c.want.reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want.reason != "" && !errors.As(err, &rej):
				t.Fatalf("err = %v, want a %s rejection", err, c.want.reason)
			case c.want.reason != "":
				if rej.Reason != c.want.reason || !slices.Equal(rej.FLIDs, c.want.flids) || !cmp.Equal(rej.Conflicts, c.want.conflicts) {
					t.Fatalf("refused %s %v %v, want %s %v %v", rej.Reason, rej.FLIDs, rej.Conflicts, c.want.reason, c.want.flids, c.want.conflicts)
				}
				if plan.Ledger != nil || len(plan.Victims) > 0 {
					t.Fatalf("a refused snapshot plans writes: ledger %+v, victims %v", plan.Ledger, plan.VictimIDs())
				}
			}
			// The roster's difference is checked against the roster read
			// (checkRosterDifference), the rest of the ledger write here.
			if plan.Ledger != nil {
				checkRosterDifference(t, c.facts.Roster, plan.Ledger)
			}
			if diff := cmp.Diff(c.want.plan, plan, cmpopts.IgnoreUnexported(engine.SnapshotPlan{}), cmpopts.EquateEmpty(),
				cmpopts.IgnoreFields(engine.LedgerWrite{}, "Join", "Leave")); diff != "" {
				t.Fatalf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// checkRosterDifference checks a ledger write's Join and Leave against the
// roster read: Join is the new roster's flights the old one lacks, Leave
// the old roster's flights the new one lacks, each in its roster's order.
func checkRosterDifference(t *testing.T, old []flight.FLID, l *engine.LedgerWrite) {
	t.Helper()
	var join, leave []flight.FLID
	for _, f := range l.Roster {
		if !slices.Contains(old, f) {
			join = append(join, f)
		}
	}
	for _, f := range old {
		if !slices.Contains(l.Roster, f) {
			leave = append(leave, f)
		}
	}
	if !cmp.Equal(join, l.Join, cmpopts.EquateEmpty()) || !cmp.Equal(leave, l.Leave, cmpopts.EquateEmpty()) {
		t.Fatalf("roster %v over %v: join %v leave %v, want join %v leave %v", l.Roster, old, l.Join, l.Leave, join, leave)
	}
}

// A full-day snapshot writes only what changes in the day's roster: a day
// asked for again with the same flights writes no roster row, one with a
// flight more and one less writes those two, a refused record's rostered
// flight stays without being written, and a new day writes its whole roster.
func TestPlanSnapshotRosterDifference(t *testing.T) {
	t.Parallel()
	stored := map[flight.FLID]string{fA: day9, fB: day9, fC: day9, fD: day9}
	cases := []struct {
		name        string
		facts       engine.SnapshotFacts
		join, leave []flight.FLID
	}{
		{name: "the same flights again", facts: fullDay(day9, keys(day9, fB, fA, fC), 3, ids(fA, fB, fC), stored)},
		{name: "one more, one less", facts: fullDay(day9, keys(day9, fA, fB, fD), 3, ids(fA, fB, fC), stored),
			join: ids(fD), leave: ids(fC)},
		{name: "a new day", facts: fullDay(day9, keys(day9, fA, fB), 0, nil, nil), join: ids(fA, fB)},
		{name: "an empty snapshot", facts: fullDay(day9, nil, 2, ids(fA, fB), stored), leave: ids(fA, fB)},
		{name: "a refused record's rostered flight", facts: func() engine.SnapshotFacts {
			f := fullDay(day9, keys(day9, fA), 1, ids(fA, fB, fC), stored)
			f.Keep = ids(fB)
			return f
		}(), leave: ids(fC)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			plan, err := engine.PlanSnapshot(c.facts)
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(plan.Ledger.Join, c.join, cmpopts.EquateEmpty()) || !cmp.Equal(plan.Ledger.Leave, c.leave, cmpopts.EquateEmpty()) {
				t.Fatalf("join %v leave %v, want join %v leave %v", plan.Ledger.Join, plan.Ledger.Leave, c.join, c.leave)
			}
		})
	}
}

// The plan's merges: a full-day snapshot sets the day of its flights that
// have none (processing rules R5.3), a window sets none, and a skip-conflicts
// replay's skipped records are not written.
func TestSnapshotPlanMerge(t *testing.T) {
	t.Parallel()
	nullDay := stored(fB, "", func(s *flight.State) { s.Scalars["FLNO"] = "CA2" })
	other := stored(fC, day10, func(s *flight.State) { s.Scalars["FLNO"] = "CA3" })
	current := map[flight.FLID]flight.State{fB: nullDay, fC: other}
	records := []flight.Commands{full(fA, "CA1"), full(fB, "CA2"), full(fC, "CA3-NEW")}
	fresh := func(flid flight.FLID, flno, day string) flight.State {
		s := flight.NewState(flid)
		s.Scalars["FLNO"], s.OperationDay = flno, day
		return s
	}
	withDay := nullDay.Clone()
	withDay.OperationDay = day9

	for _, c := range []struct {
		name      string
		facts     engine.SnapshotFacts
		want      []engine.Write
		unchanged int
	}{
		{
			name: "full day, skip-conflicts: A new of the day, B's NULL day set, C of another day skipped",
			facts: func() engine.SnapshotFacts {
				f := fullDay(day9, keys(day9, fA, fB, fC), 0, nil, map[flight.FLID]string{fB: "", fC: day10})
				f.SkipConflicts = true
				return f
			}(),
			want: []engine.Write{
				{Next: fresh(fA, "CA1", day9), Changed: []string{"FLNO", flight.KeyOperationDay}, IsNew: true,
					Diff: changes("FLNO", flight.ChangeSet, "", `"CA1"`, flight.KeyOperationDay, flight.ChangeSet, "", `"`+day9+`"`)},
				{Next: withDay, Changed: []string{flight.KeyOperationDay}, Diff: changes(flight.KeyOperationDay, flight.ChangeSet, "", `"`+day9+`"`)},
			},
		},
		{
			name: "window: A new without a day, B unchanged and still without one",
			facts: engine.SnapshotFacts{Records: keys(day9, fA, fB),
				Stored: map[flight.FLID]string{fB: ""}},
			want:      []engine.Write{{Next: fresh(fA, "CA1", ""), Changed: []string{"FLNO"}, IsNew: true, Diff: changes("FLNO", flight.ChangeSet, "", `"CA1"`)}},
			unchanged: 1,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			plan, err := engine.PlanSnapshot(c.facts)
			if err != nil {
				t.Fatal(err)
			}
			recs := records[:len(c.facts.Records)]
			writes, unchanged, err := plan.Merge(recs, current)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, writes); diff != "" || unchanged != c.unchanged {
				t.Fatalf("unchanged %d, want %d; writes (-want +got):\n%s", unchanged, c.unchanged, diff)
			}
		})
	}
}
