package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// The engine's decisions at their edges: ties, a flight met twice in one
// message, a batch large enough to be spread over the cores, what a set
// keeps once written.

func setFLNO(flid flight.FLID, flno string) flight.Commands {
	return flight.Commands{FLID: flid, Cmds: []flight.Command{{Tag: "FLNO", Op: flight.OpSet, Value: flno}}}
}

func setALCD(flid flight.FLID, alcd string) flight.Commands {
	return flight.Commands{FLID: flid, Cmds: []flight.Command{{Tag: "ALCD", Op: flight.OpSet, Value: alcd}}}
}

func TestWriteTouches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		w    engine.Write
		tag  string
		want bool
	}{
		{engine.Write{IsNew: true}, "FLNO", true},
		{engine.Write{Changed: []string{"ALCD", "FLNO"}}, "FLNO", true},
		{engine.Write{Changed: []string{"ALCD"}}, "FLNO", false},
		{engine.Write{}, "FLNO", false},
	} {
		if got := c.w.Touches(c.tag); got != c.want {
			t.Errorf("%+v.Touches(%s) = %v, want %v", c.w, c.tag, got, c.want)
		}
	}
}

// A flight that does not exist starts from an empty state, whatever state
// the caller passes along.
func TestMergeOfAMissingFlightStartsEmpty(t *testing.T) {
	t.Parallel()
	w, changed, err := engine.Merge(seedCA100(), false, setFLNO(ca100, "CA1"))
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	want := flight.NewState(ca100)
	want.Scalars["FLNO"] = "CA1"
	// The history of a new flight: every field it has, set (none of the
	// stale state passed along).
	setFLNO := []flight.FieldChange{{Tag: "FLNO", Op: flight.ChangeSet, New: json.RawMessage(`"CA1"`)}}
	if diff := cmp.Diff(engine.Write{Next: want, Changed: []string{"FLNO"}, IsNew: true, Diff: setFLNO}, w); diff != "" {
		t.Fatalf("write (-want +got):\n%s", diff)
	}
}

func TestNoticeListsEveryChangedTag(t *testing.T) {
	t.Parallel()
	s := stored(fA, day9, func(s *flight.State) { s.Scalars["ALCD"], s.Scalars["FLNO"] = "CA", "CA1" })
	up, err := engine.Upserts([]engine.Write{{Next: s, Changed: []string{"ALCD", "FLNO"}}}, engine.Meta{MessageID: msgID, Type: "SCHD", Styp: "RESP"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"CHANGED":["ALCD","FLNO"],"FLID":"1","MSG_ID":500,"STATE_VERSION":7,"STYP":"RESP","TYPE":"SCHD"}`; up[0].Notice != want {
		t.Fatalf("notice %s, want %s", up[0].Notice, want)
	}
}

// A refused state names its largest field; of two as large, the first by
// name (the same answer whatever order the document's members are read in,
// hence the repetitions).
func TestTooLargeNamesTheLargestField(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		alcd, flno int
		want       string
	}{
		"a tie":             {alcd: 100, flno: 100, want: "ALCD"},
		"the larger, later": {alcd: 100, flno: 101, want: "FLNO"},
		"the larger, first": {alcd: 101, flno: 100, want: "ALCD"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := stored(fA, day9, func(s *flight.State) {
				s.Scalars["ALCD"], s.Scalars["FLNO"] = strings.Repeat("A", c.alcd), strings.Repeat("F", c.flno)
			})
			meta := engine.Meta{MessageID: msgID, Type: "SCHD", Styp: "RESP", Door: &fakeDoor{max: 10}}
			for range 64 {
				_, err := engine.Upserts([]engine.Write{{Next: s, Changed: []string{"ALCD", "FLNO"}}}, meta)
				var tl *engine.TooLarge
				if !errors.As(err, &tl) || tl.Field != c.want || tl.FieldBytes != max(c.alcd, c.flno)+2 || tl.Items != 0 {
					t.Fatalf("err = %v, want the largest field %s", err, c.want)
				}
			}
		})
	}
}

// A ledger row from before the received time was recorded matches a
// replay by message id alone: another message over it is no replay.
func TestPlanSnapshotReplayIsTheSameMessageOnly(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		last   int64
		replay bool
	}{
		"another message": {last: planMsg - 1},
		"the same one":    {last: planMsg, replay: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := fullDay(day9, keys(day9, fA), 7, ids(fA), map[flight.FLID]string{fA: day9})
			f.Ledger.LastMessageID, f.Ledger.LastReceivedAt = c.last, time.Time{}
			p, err := engine.PlanSnapshot(f)
			if err != nil {
				t.Fatal(err)
			}
			if p.Replay != c.replay || (p.Ledger == nil) != c.replay {
				t.Fatalf("replay %v, ledger %+v: want replay %v", p.Replay, p.Ledger, c.replay)
			}
			if !c.replay && (p.Ledger.Expect != 7 || p.Ledger.Version != 8) {
				t.Fatalf("ledger %+v, want 7 → 8", p.Ledger)
			}
		})
	}
}

func TestVictimIDs(t *testing.T) {
	t.Parallel()
	p, err := engine.PlanSnapshot(fullDay(day9, keys(day9, ca100, mu201), 7, ids(ca100, cz300, fA),
		map[flight.FLID]string{ca100: day9, cz300: day9, fA: day9}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids(fA, cz300), p.VictimIDs()); diff != "" {
		t.Fatalf("victim ids (-want +got):\n%s", diff)
	}
	if got := (engine.SnapshotPlan{}).VictimIDs(); len(got) != 0 {
		t.Fatalf("victim ids of a plan without victims: %v", got)
	}
}

// A batch large enough to be spread over the cores renders every write's
// events, each its own, in the writes' order; a snapshot chunk as large
// merges the same way.
func TestLargeBatchesKeepTheirOrder(t *testing.T) {
	t.Parallel()
	const n = 301
	writes := make([]engine.Write, n)
	records := make([]flight.Commands, n)
	versions := make([]int64, n)
	for i := range writes {
		flid := flight.FLID(i + 1)
		writes[i] = engine.Write{Next: stored(flid, day9, func(s *flight.State) { s.Scalars["FLNO"] = fmt.Sprint("CA", i) }), Changed: []string{"FLNO"}}
		records[i] = full(flid, fmt.Sprint("CA", i))
		versions[i] = int64(1000 + i)
	}
	meta := engine.Meta{MessageID: msgID, Type: "SCHD", Styp: "DNLD"}
	engine.Stamp(writes, versions, meta, now)
	events, err := engine.Upserts(writes, meta)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != n {
		t.Fatalf("%d events, want %d", len(events), n)
	}
	for i, e := range events {
		if e.FLID != flight.FLID(i+1) || e.Version != versions[i] || e.State != doc(t, writes[i].Next) {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	merged, unchanged, err := engine.MergeSnapshot(records, nil, false, "")
	if err != nil || unchanged != 0 || len(merged) != n {
		t.Fatalf("%d writes, %d unchanged, err %v", len(merged), unchanged, err)
	}
	for i, w := range merged {
		if w.Next.FLID != flight.FLID(i+1) || w.Next.Scalars["FLNO"] != fmt.Sprint("CA", i) || !w.IsNew {
			t.Fatalf("write %d: %+v", i, w)
		}
	}
}

// Records of one flight in one message apply in order, each on the one
// before: one creation, a version each, the state of the last.
func TestWorkingSetRecordsOfOneFlightChain(t *testing.T) {
	t.Parallel()
	set := engine.NewWorkingSet([]flight.FLID{ca100, fA}, map[flight.FLID]flight.State{ca100: seedCA100()}, []int64{101, 102, 103, 104}, now)
	meta := engine.Meta{MessageID: msgID, Type: "FLOP", Styp: "FLNO"}
	eff, err := set.Increment(meta, []flight.Commands{setFLNO(ca100, "CA9"), setALCD(ca100, "CA"), setFLNO(fA, "CA1"), setALCD(fA, "XX")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[flight.FLID]int64{ca100: 102, fA: 104}, eff.Versions); diff != "" {
		t.Fatalf("versions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ids(fA), eff.Created); diff != "" {
		t.Fatalf("created (-want +got):\n%s", diff)
	}
	wantCA := next(seedCA100(), 102, func(s *flight.State) { s.Scalars["FLNO"], s.Scalars["ALCD"] = "CA9", "CA" })
	wantA := flight.NewState(fA)
	wantA.Scalars["FLNO"], wantA.Scalars["ALCD"] = "CA1", "XX"
	wantA.StateVersion, wantA.LastMessageID, wantA.UpdatedAt = 104, msgID, now
	p := set.Pending()
	want := []engine.Write{{Next: wantCA, Changed: []string{"FLNO", "ALCD"}}, {Next: wantA, Changed: []string{"ALCD", "FLNO"}, IsNew: true}}
	if diff := cmp.Diff(want, p.Writes); diff != "" {
		t.Fatalf("writes (-want +got):\n%s", diff)
	}
	if len(p.Events) != 4 || p.Events[0].State != "" || p.Events[1].State == "" || p.Events[2].State != "" || p.Events[3].State == "" {
		t.Fatalf("events %+v: want four, the state on each flight's newest", p.Events)
	}
}

// A FLID named twice in one delete is deleted once.
func TestWorkingSetDeleteOnce(t *testing.T) {
	t.Parallel()
	set := engine.NewWorkingSet([]flight.FLID{ca100, fA}, map[flight.FLID]flight.State{ca100: seedCA100()}, []int64{101, 102}, now)
	eff, err := set.Delete(engine.Meta{MessageID: msgID, Type: "FDEL"}, []flight.FLID{ca100, ca100, fA, fA})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(engine.DeleteEffect{Versions: map[flight.FLID]int64{ca100: 101}, Missing: ids(fA)}, eff); diff != "" {
		t.Fatalf("effect (-want +got):\n%s", diff)
	}
	if p := set.Pending(); len(p.Events) != 1 || len(p.Writes) != 0 || !cmp.Equal(ids(ca100), p.Gone) {
		t.Fatalf("pending %+v", p)
	}
}

// Once written, the set's changes are what it holds as stored: a changed
// flight's new state, a deleted flight gone, a created one present, an
// untouched one as loaded; and nothing is left to write.
func TestWorkingSetWrittenIsStored(t *testing.T) {
	t.Parallel()
	set := engine.NewWorkingSet([]flight.FLID{ca100, fB, fC, fD}, map[flight.FLID]flight.State{ca100: seedCA100(), fB: stored(fB, day9, nil), fD: stored(fD, day9, nil)},
		[]int64{101, 102, 103}, now)
	meta := engine.Meta{MessageID: msgID, Type: "FLOP", Styp: "FLNO"}
	if _, err := set.Increment(meta, []flight.Commands{setFLNO(ca100, "CA9")}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Delete(meta, ids(fB)); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Increment(meta, []flight.Commands{setFLNO(fC, "CA3")}); err != nil {
		t.Fatal(err)
	}
	set.Pending()
	set.Written()
	if set.Dirty() {
		t.Fatal("dirty after Written")
	}
	got := map[flight.FLID]*flight.State{}
	for f, s := range set.Stored() {
		got[f] = s
	}
	wantC := flight.NewState(fC)
	wantC.Scalars["FLNO"], wantC.StateVersion, wantC.LastMessageID, wantC.UpdatedAt = "CA3", 103, msgID, now
	wantCA := next(seedCA100(), 101, func(s *flight.State) { s.Scalars["FLNO"] = "CA9" })
	wantD := stored(fD, day9, nil)
	if diff := cmp.Diff(map[flight.FLID]*flight.State{ca100: &wantCA, fB: nil, fC: &wantC, fD: &wantD}, got); diff != "" {
		t.Fatalf("stored (-want +got):\n%s", diff)
	}
	n := 0
	for range set.Stored() {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("a loop over Stored stopped after %d", n)
	}
}

// A set over flights none of which exist (no states at all) creates and
// keeps them.
func TestWorkingSetWithoutStates(t *testing.T) {
	t.Parallel()
	set := engine.NewWorkingSet(ids(fA), nil, []int64{101}, now)
	if _, err := set.Increment(engine.Meta{MessageID: msgID, Type: "FLOP", Styp: "FLNO"}, []flight.Commands{setFLNO(fA, "CA1")}); err != nil {
		t.Fatal(err)
	}
	if p := set.Pending(); len(p.Writes) != 1 || !p.Writes[0].IsNew {
		t.Fatalf("pending %+v", p)
	}
	set.Written()
	for f, s := range set.Stored() {
		if f != fA || s == nil || s.Scalars["FLNO"] != "CA1" || s.StateVersion != 101 {
			t.Fatalf("stored %s: %+v", f, s)
		}
	}
}
