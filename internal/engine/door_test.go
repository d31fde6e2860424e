package engine_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// fakeDoor counts a record as its key, value and headers' bytes, and
// refuses records of the event refuse ("" any) above max.
type fakeDoor struct {
	max    int
	refuse string
	seen   [][]engine.Header
}

func (d *fakeDoor) Of(key, value []byte, headers []engine.Header) engine.RecordSize {
	d.seen = append(d.seen, headers)
	n := len(key) + len(value)
	for _, h := range headers {
		n += len(h.Key) + len(h.Value)
	}
	for _, h := range headers {
		if h.Key == "event" && d.refuse != "" && h.Value != d.refuse {
			return engine.RecordSize{}
		}
	}
	return engine.RecordSize{Uncompressed: n, Compressed: n / 2}
}

func (d *fakeDoor) Fits(s engine.RecordSize) bool { return s.Uncompressed <= d.max }
func (d *fakeDoor) Max() int                      { return d.max }

// The door refuses a message whose state or notice would be a larger
// Kafka record than the topics accept; the refused message changes
// nothing in the set.
func TestDoor(t *testing.T) {
	t.Parallel()
	gates := func(n int) []flight.Item {
		items := make([]flight.Item, n)
		for i := range items {
			items[i] = flight.Item{"GTNO": "1", "GATE": "A1"}
		}
		return items
	}
	for name, c := range map[string]struct {
		door *fakeDoor
		want *engine.TooLarge
	}{
		"no door":       {},
		"all fits":      {door: &fakeDoor{max: 1 << 20}},
		"state too big": {door: &fakeDoor{max: 600, refuse: engine.EventUpsert}, want: &engine.TooLarge{FLID: ca100, Kind: engine.KindState, Limit: 600, Field: "GTDT", Items: 40}},
		"notice too big": {door: &fakeDoor{max: 10, refuse: engine.EventNotice},
			want: &engine.TooLarge{FLID: ca100, Kind: engine.KindNotice, Limit: 10, Field: "FLID"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			set := engine.NewWorkingSet([]flight.FLID{ca100}, map[flight.FLID]flight.State{ca100: seedCA100()}, []int64{firstV}, now)
			meta := engine.Meta{MessageID: msgID, Type: "FLOP", Styp: "GTDT"}
			if c.door != nil {
				meta.Door = c.door
			}
			_, err := set.Increment(meta, []flight.Commands{{FLID: ca100, Cmds: []flight.Command{{Tag: "GTDT", Op: flight.OpReplace, Items: gates(40)}}}})
			var tl *engine.TooLarge
			if c.want == nil {
				if err != nil || !set.Dirty() {
					t.Fatalf("err = %v, dirty %v: want the message kept", err, set.Dirty())
				}
				return
			}
			if !errors.As(err, &tl) {
				t.Fatalf("err = %v, want *TooLarge", err)
			}
			if tl.Size.Uncompressed <= c.want.Limit || tl.FieldBytes == 0 {
				t.Fatalf("size %+v, field bytes %d", tl.Size, tl.FieldBytes)
			}
			got := *tl
			got.Size, got.FieldBytes = engine.RecordSize{}, 0
			if diff := cmp.Diff(*c.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if set.Dirty() {
				t.Fatal("a refused message left something to write")
			}
		})
	}
}

// The door counts the headers dispatch sends: the state's version, its
// event and, when the flight has one, its day.
func TestDoorCountsTheRecordHeaders(t *testing.T) {
	t.Parallel()
	door := &fakeDoor{max: 1 << 20}
	set := engine.NewWorkingSet([]flight.FLID{ca100, 77}, map[flight.FLID]flight.State{ca100: seedCA100()}, []int64{firstV, firstV + 1}, now)
	meta := engine.Meta{MessageID: msgID, Type: "FLOP", Styp: "ESTT", Door: door}
	if _, err := set.Increment(meta, []flight.Commands{
		{FLID: ca100, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261000"}}},
		{FLID: 77, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261000"}}},
	}); err != nil {
		t.Fatal(err)
	}
	want := [][]engine.Header{
		engine.RecordHeaders(engine.EventUpsert, firstV, day9), engine.RecordHeaders(engine.EventNotice, firstV, day9),
		engine.RecordHeaders(engine.EventUpsert, firstV+1, ""), engine.RecordHeaders(engine.EventNotice, firstV+1, ""),
	}
	if diff := cmp.Diff(want, door.seen); diff != "" {
		t.Fatalf("headers measured (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]engine.Header{{Key: "state-version", Value: "101"}, {Key: "event", Value: "UPSERT"}, {Key: "operation-day", Value: day9}},
		engine.RecordHeaders(engine.EventUpsert, firstV, day9)); diff != "" {
		t.Fatalf("RecordHeaders (-want +got):\n%s", diff)
	}
}

func TestTooLargeSaysWhichFieldGrew(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    engine.TooLarge
		want string
	}{
		{engine.TooLarge{FLID: 7, Kind: engine.KindState, Size: engine.RecordSize{Uncompressed: 2000, Compressed: 900}, Limit: 1000, Field: "GTDT", FieldBytes: 1500, Items: 40},
			"flight 7: its state would be a Kafka record of 2000 bytes (900 compressed), more than kafka.maxRecordBytes 1000; largest field GTDT: 1500 bytes in 40 items"},
		{engine.TooLarge{FLID: 7, Kind: engine.KindNotice, Size: engine.RecordSize{Uncompressed: 20, Compressed: 20}, Limit: 10, Field: "FLID", FieldBytes: 3},
			"flight 7: its change notice would be a Kafka record of 20 bytes (20 compressed), more than kafka.maxRecordBytes 10; largest field FLID: 3 bytes"},
		{engine.TooLarge{FLID: 7, Kind: engine.KindState, Size: engine.RecordSize{Uncompressed: 20, Compressed: 20}, Limit: 10},
			"flight 7: its state would be a Kafka record of 20 bytes (20 compressed), more than kafka.maxRecordBytes 10"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}
