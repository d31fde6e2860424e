package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// The engine's error paths: each refusal is returned, wrapped with what it
// was about, and leaves nothing behind (no write, no event, a working set
// as clean as before the message).

// badTag is a command on a tag the field table does not map.
var badTag = flight.Command{Tag: "NOPE", Op: flight.OpSet, Value: "1"}

// collided is a stored flight whose state cannot be rendered: a scalar and
// a list under one key (a canonical JSON key collision).
func collided(flid flight.FLID) flight.State {
	return stored(flid, day9, func(s *flight.State) {
		s.Scalars["GTDT"] = "G1"
		s.Lists["GTDT"] = []flight.Item{{"GTNO": "1", "GATE": "G1"}}
	})
}

func TestMergeRefusesAnInvalidCommand(t *testing.T) {
	t.Parallel()
	for _, exists := range []bool{true, false} {
		w, changed, err := engine.Merge(seedCA100(), exists, flight.Commands{FLID: ca100, Cmds: []flight.Command{badTag}})
		if !errors.Is(err, flight.ErrInvalidCommand) || !strings.Contains(err.Error(), "merge flight 121112312") {
			t.Fatalf("exists %v: err = %v, want the invalid command wrapped with its flight", exists, err)
		}
		if changed || w.Next.FLID != 0 || w.Changed != nil || w.IsNew {
			t.Fatalf("exists %v: a refused merge returned a write: %v %+v", exists, changed, w)
		}
	}
}

func TestMergeSnapshotRefusesTheWholeChunkOnAnInvalidRecord(t *testing.T) {
	t.Parallel()
	records := []flight.Commands{full(fA, "CA1"), {FLID: fB, Full: true, Cmds: []flight.Command{badTag}}, full(fC, "CA3")}
	writes, unchanged, err := engine.MergeSnapshot(records, nil, true, day9)
	if !errors.Is(err, flight.ErrInvalidCommand) || !strings.Contains(err.Error(), "flight 2") {
		t.Fatalf("err = %v, want the invalid record's error", err)
	}
	if writes != nil || unchanged != 0 {
		t.Fatalf("writes %+v, unchanged %d: want none", writes, unchanged)
	}
}

func TestUpsertsRefuseTheWholeBatch(t *testing.T) {
	t.Parallel()
	meta := engine.Meta{MessageID: msgID, Type: "SCHD", Styp: "RESP"}
	t.Run("a state that cannot be rendered", func(t *testing.T) {
		t.Parallel()
		writes := []engine.Write{{Next: stored(fA, day9, nil), Changed: []string{"FLNO"}}, {Next: collided(fB), Changed: []string{"GTDT"}}}
		events, err := engine.Upserts(writes, meta)
		if !errors.Is(err, flight.ErrKeyCollision) || !strings.Contains(err.Error(), "state of flight 2") {
			t.Fatalf("err = %v, want the key collision wrapped with its flight", err)
		}
		if events != nil {
			t.Fatalf("events %+v, want none", events)
		}
	})
	t.Run("a state larger than the door", func(t *testing.T) {
		t.Parallel()
		m := meta
		m.Door = &fakeDoor{max: 10}
		events, err := engine.Upserts([]engine.Write{{Next: stored(fA, day9, nil), Changed: []string{"FLNO"}}}, m)
		var tl *engine.TooLarge
		if !errors.As(err, &tl) || tl.FLID != fA || tl.Kind != engine.KindState || tl.Limit != 10 {
			t.Fatalf("err = %v, want *TooLarge of flight 1's state", err)
		}
		if events != nil {
			t.Fatalf("events %+v, want none", events)
		}
	})
}

// clean fails when set holds anything to write.
func clean(t *testing.T, set *engine.WorkingSet) {
	t.Helper()
	if set.Dirty() {
		t.Fatalf("the set is dirty after a refused message")
	}
	if diff := cmp.Diff(engine.Pending{}, set.Pending()); diff != "" {
		t.Fatalf("pending after a refused message (-want +got):\n%s", diff)
	}
}

func TestWorkingSetRefusals(t *testing.T) {
	t.Parallel()
	meta := engine.Meta{MessageID: msgID, Type: "FLOP", Styp: "FLNO"}
	setFLNO := func(flid flight.FLID, flno string) flight.Commands {
		return flight.Commands{FLID: flid, Cmds: []flight.Command{{Tag: "FLNO", Op: flight.OpSet, Value: flno}}}
	}
	newSet := func(versions ...int64) *engine.WorkingSet {
		return engine.NewWorkingSet([]flight.FLID{ca100, fA}, map[flight.FLID]flight.State{ca100: seedCA100(), fB: collided(fB)}, versions, now)
	}
	for _, c := range []struct {
		name    string
		set     *engine.WorkingSet
		records []flight.Commands
		is      error
		want    string
	}{
		{name: "a full record", set: newSet(firstV), records: []flight.Commands{{FLID: ca100, Full: true, Cmds: setFLNO(ca100, "X").Cmds}},
			want: "message 500: flight 121112312: a full record is not an increment"},
		{name: "a flight not prefetched", set: newSet(firstV), records: []flight.Commands{setFLNO(ca100, "CA9"), setFLNO(fC, "CA3")},
			want: "working set: flight 3 was not prefetched"},
		{name: "an invalid command after a good record", set: newSet(firstV, firstV+1),
			records: []flight.Commands{setFLNO(ca100, "CA9"), {FLID: fA, Cmds: []flight.Command{badTag}}},
			is:      flight.ErrInvalidCommand, want: "message 500: merge flight 1"},
		{name: "no state version left", set: newSet(), records: []flight.Commands{setFLNO(ca100, "CA9")},
			want: "state versions exhausted"},
		{name: "the versions run out on the second record", set: newSet(firstV), records: []flight.Commands{setFLNO(ca100, "CA9"), setFLNO(fA, "CA1")},
			want: "state versions exhausted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			eff, err := c.set.Increment(meta, c.records)
			if err == nil || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if eff.Versions != nil || eff.Created != nil || eff.States != nil || eff.Unchanged != 0 {
				t.Fatalf("effect %+v, want none", eff)
			}
			clean(t, c.set)
		})
	}

	t.Run("delete of a flight not prefetched", func(t *testing.T) {
		t.Parallel()
		set := newSet(firstV, firstV+1)
		eff, err := set.Delete(meta, []flight.FLID{fC})
		if err == nil || !strings.Contains(err.Error(), "working set: flight 3 was not prefetched") {
			t.Fatalf("err = %v", err)
		}
		if eff.Versions != nil || eff.Missing != nil {
			t.Fatalf("effect %+v, want none", eff)
		}
		clean(t, set)
	})
	t.Run("delete without a state version left", func(t *testing.T) {
		t.Parallel()
		set := newSet()
		eff, err := set.Delete(meta, []flight.FLID{ca100})
		if err == nil || !strings.Contains(err.Error(), "state versions exhausted") {
			t.Fatalf("err = %v", err)
		}
		if eff.Versions != nil || eff.Missing != nil {
			t.Fatalf("effect %+v, want none", eff)
		}
		clean(t, set)
	})
}

// A delete message refused on its second FLID keeps nothing of its first:
// a message the engine refuses changes nothing in the set.
func TestWorkingSetDeleteIsAtomic(t *testing.T) {
	t.Parallel()
	meta := engine.Meta{MessageID: msgID, Type: "FDEL"}
	for name, c := range map[string]struct {
		flids    []flight.FLID
		versions []int64
		want     string
	}{
		"a flight not prefetched": {flids: []flight.FLID{ca100, fC}, versions: []int64{firstV, firstV + 1}, want: "was not prefetched"},
		"no state version left":   {flids: []flight.FLID{ca100, fB}, versions: []int64{firstV}, want: "state versions exhausted"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			set := engine.NewWorkingSet([]flight.FLID{ca100, fB}, map[flight.FLID]flight.State{ca100: seedCA100(), fB: stored(fB, day9, nil)}, c.versions, now)
			eff, err := set.Delete(meta, c.flids)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if eff.Versions != nil || eff.Missing != nil {
				t.Fatalf("effect %+v, want none", eff)
			}
			clean(t, set)
		})
	}
}

// A refused message leaves what earlier messages put in the set: their
// events, states and changed tags are pending as if it never came.
func TestWorkingSetRefusalKeepsEarlierMessages(t *testing.T) {
	t.Parallel()
	meta := engine.Meta{MessageID: msgID, Type: "FLOP", Styp: "FLNO"}
	setFLNO := func(flid flight.FLID, flno string) flight.Commands {
		return flight.Commands{FLID: flid, Cmds: []flight.Command{{Tag: "FLNO", Op: flight.OpSet, Value: flno}}}
	}
	newSet := func() *engine.WorkingSet {
		return engine.NewWorkingSet([]flight.FLID{ca100, fA}, map[flight.FLID]flight.State{ca100: seedCA100()}, []int64{firstV, firstV + 1, firstV + 2}, now)
	}
	want, got := newSet(), newSet()
	for _, set := range []*engine.WorkingSet{want, got} {
		if _, err := set.Increment(meta, []flight.Commands{setFLNO(ca100, "CA9"), setFLNO(fA, "CA1")}); err != nil {
			t.Fatal(err)
		}
	}
	refused := meta
	refused.MessageID++
	if _, err := got.Increment(refused, []flight.Commands{setFLNO(ca100, "CA7"), {FLID: fA, Cmds: []flight.Command{badTag}}}); err == nil {
		t.Fatal("the message with an invalid command was accepted")
	}
	if _, err := got.Increment(refused, []flight.Commands{setFLNO(fA, "CA2"), setFLNO(fC, "CA3")}); err == nil {
		t.Fatal("the message with a flight not prefetched was accepted")
	}
	if diff := cmp.Diff(want.Pending(), got.Pending()); diff != "" {
		t.Fatalf("pending after refused messages (-want +got):\n%s", diff)
	}
}

// A record that creates a flight is a write even when it sets no field
// (it clears one the flight does not have): the flight exists, empty.
func TestIncrementCreatesAnEmptyFlight(t *testing.T) {
	t.Parallel()
	meta := engine.Meta{MessageID: msgID, Type: "FLOP", Styp: "ESTT"}
	set := engine.NewWorkingSet([]flight.FLID{fC}, nil, []int64{firstV}, now)
	eff, err := set.Increment(meta, []flight.Commands{{FLID: fC, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpClear}}}})
	if err != nil {
		t.Fatal(err)
	}
	if eff.Versions[fC] != firstV || len(eff.Created) != 1 {
		t.Fatalf("effect %+v, want flight %s created at version %d", eff, fC, firstV)
	}
	p := set.Pending()
	if len(p.Writes) != 1 || p.Writes[0].Next.FLID != fC || !p.Writes[0].IsNew || len(p.Events) != 1 {
		t.Fatalf("pending %+v, want the new flight %s written with its event", p, fC)
	}
}
