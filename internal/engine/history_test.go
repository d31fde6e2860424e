package engine_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// histRow is what a flight's history records of one event.
type histRow struct {
	FLID    flight.FLID
	Version int64
	Msg     int64
	Kind    string
	Changes string
}

// Every state a working set makes of a flight is a history row with what
// the message changed: an increment's fields with old and new values (two
// records of one flight in one message are two rows, each against the
// state before it), a new flight's every field Set, a deletion none.
func TestWorkingSetHistory(t *testing.T) {
	t.Parallel()
	base := stored(12345678, day9, func(s *flight.State) {
		s.Scalars["FLNO"], s.Scalars["ESTT"] = "CA100", "09SEP260900"
		s.Lists["GTDT"] = []flight.Item{{"GTNO": "1", "GATE": "B7"}}
	})
	set := engine.NewWorkingSet([]flight.FLID{12345678, 42}, map[flight.FLID]flight.State{12345678: base},
		[]int64{11, 12, 13, 14, 15}, now)
	received := now.Add(-time.Minute)
	meta := func(id int64, styp string) engine.Meta {
		return engine.Meta{MessageID: id, ReceivedAt: received, Type: "FLOP", Styp: styp}
	}
	cmd := func(flid flight.FLID, tag string, op flight.Op, value string) flight.Commands {
		return flight.Commands{FLID: flid, Cmds: []flight.Command{{Tag: tag, Op: op, Value: value}}}
	}
	if _, err := set.Increment(meta(601, "ESTT"), []flight.Commands{
		cmd(12345678, "ESTT", flight.OpSet, "09SEP260930"),
		cmd(12345678, "ESTT", flight.OpClear, ""),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Increment(meta(602, "FLNO"), []flight.Commands{cmd(42, "FLNO", flight.OpSet, "MU5")}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Increment(meta(603, "FLNO"), []flight.Commands{cmd(42, "FLNO", flight.OpSet, "MU5")}); err != nil {
		t.Fatal(err) // changes nothing: no version, no row
	}
	if _, err := set.Delete(meta(604, "FDEL"), []flight.FLID{12345678}); err != nil {
		t.Fatal(err)
	}
	var got []histRow
	for _, e := range set.Pending().Events {
		if !e.ReceivedAt.Equal(received) {
			t.Errorf("event %d: received %v, want the message's %v", e.Version, e.ReceivedAt, received)
		}
		got = append(got, histRow{FLID: e.FLID, Version: e.Version, Msg: e.MessageID, Kind: e.ChangeKind, Changes: e.Changes})
	}
	want := []histRow{
		{12345678, 11, 601, engine.ChangeUpsert, `[{"field":"ESTT","op":"Replace","old":"09SEP260900","new":"09SEP260930"}]`},
		{12345678, 12, 601, engine.ChangeUpsert, `[{"field":"ESTT","op":"Clear","old":"09SEP260930"}]`},
		{42, 13, 602, engine.ChangeUpsert, `[{"field":"FLNO","op":"Set","new":"MU5"}]`},
		{12345678, 14, 604, engine.ChangeDelete, `[]`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("history rows (-want +got):\n%s", diff)
	}
}

// A snapshot's diff-delete and the lifecycle job's move to history are
// told apart by the message that caused them.
func TestTombstoneHistoryKinds(t *testing.T) {
	t.Parallel()
	gone := []flight.State{stored(9, day9, nil)}
	for _, c := range []struct {
		meta engine.Meta
		want string
	}{
		{engine.Meta{MessageID: msgID, Type: "SCHD", Styp: "DNLD"}, engine.ChangeVictim},
		{engine.Meta{Type: engine.TypeJob, Styp: "HISTORY_SWEEP"}, engine.ChangeHistory},
	} {
		events, _, err := engine.Tombstones(gone, []int64{30}, c.meta)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 || events[0].ChangeKind != c.want || events[0].Changes != "[]" {
			t.Errorf("%s/%s: %+v, want one %s row without changes", c.meta.Type, c.meta.Styp, events, c.want)
		}
	}
}
