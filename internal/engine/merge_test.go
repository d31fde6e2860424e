package engine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// full is a full-snapshot record of flid with FLNO flno and the extra
// commands.
// changes is a diff given as tag, op, old and new JSON ("" absent), four
// strings a change.
func changes(quads ...string) []flight.FieldChange {
	var out []flight.FieldChange
	raw := func(s string) json.RawMessage {
		if s == "" {
			return nil
		}
		return json.RawMessage(s)
	}
	for i := 0; i+3 < len(quads); i += 4 {
		out = append(out, flight.FieldChange{Tag: quads[i], Op: quads[i+1], Old: raw(quads[i+2]), New: raw(quads[i+3])})
	}
	return out
}

func full(flid flight.FLID, flno string, extra ...flight.Command) flight.Commands {
	return flight.Commands{FLID: flid, Full: true, Cmds: append([]flight.Command{{Tag: "FLNO", Op: flight.OpSet, Value: flno}}, extra...)}
}

// A snapshot's records merge with full-field semantics (a missing field is
// a clear); a full-day snapshot sets the day of a flight that has none,
// once (processing rules R5.3); a window never sets it (processing rules R10.5).
func TestMergeSnapshot(t *testing.T) {
	t.Parallel()
	const day10 = "2026-09-10"
	known := stored(1, day9, func(s *flight.State) { s.Scalars["FLNO"] = "CA1" })
	nullDay := stored(2, "", func(s *flight.State) { s.Scalars["FLNO"] = "CA2" })
	withEstt := stored(3, day9, func(s *flight.State) { s.Scalars["FLNO"], s.Scalars["ESTT"] = "CA3", "09SEP260900" })
	current := map[flight.FLID]flight.State{1: known, 2: nullDay, 3: withEstt}
	set := func(s flight.State, fn func(*flight.State)) flight.State {
		out := s.Clone()
		fn(&out)
		return out
	}
	fresh := func(flid flight.FLID, flno, day string) flight.State {
		s := flight.NewState(flid)
		s.Scalars["FLNO"], s.OperationDay = flno, day
		return s
	}
	for name, c := range map[string]struct {
		records   []flight.Commands
		fullDay   bool
		day       string
		want      []engine.Write
		unchanged int
		err       string
	}{
		"full day: a new flight gets the day, a NULL day is set, a known one unchanged": {
			records: []flight.Commands{full(1, "CA1"), full(2, "CA2"), full(4, "CA4")}, fullDay: true, day: day9,
			want: []engine.Write{
				{Next: set(nullDay, func(s *flight.State) { s.OperationDay = day9 }), Changed: []string{flight.KeyOperationDay},
					Diff: changes(flight.KeyOperationDay, flight.ChangeSet, "", `"`+day9+`"`)},
				{Next: fresh(4, "CA4", day9), Changed: []string{"FLNO", flight.KeyOperationDay}, IsNew: true,
					Diff: changes("FLNO", flight.ChangeSet, "", `"CA4"`, flight.KeyOperationDay, flight.ChangeSet, "", `"`+day9+`"`)},
			},
			unchanged: 1,
		},
		"a field the record omits is cleared": {
			records: []flight.Commands{full(3, "CA3")}, fullDay: true, day: day9,
			want: []engine.Write{{Next: set(withEstt, func(s *flight.State) { delete(s.Scalars, "ESTT") }), Changed: []string{"ESTT"},
				Diff: changes("ESTT", flight.ChangeClear, `"09SEP260900"`, "")}},
		},
		"a stored day is never changed": {
			records: []flight.Commands{full(1, "CA1")}, fullDay: true, day: day10,
			unchanged: 1,
		},
		"a window sets no day": {
			records:   []flight.Commands{full(2, "CA2"), full(4, "CA4")},
			want:      []engine.Write{{Next: fresh(4, "CA4", ""), Changed: []string{"FLNO"}, IsNew: true, Diff: changes("FLNO", flight.ChangeSet, "", `"CA4"`)}},
			unchanged: 1,
		},
		"an increment is no snapshot record": {
			records: []flight.Commands{{FLID: 1, Cmds: []flight.Command{{Tag: "FLNO", Op: flight.OpSet, Value: "X"}}}},
			err:     "flight 1: snapshot records carry full-snapshot commands",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			writes, unchanged, err := engine.MergeSnapshot(c.records, current, c.fullDay, c.day)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, writes); diff != "" || unchanged != c.unchanged {
				t.Fatalf("unchanged %d, want %d; writes (-want +got):\n%s", unchanged, c.unchanged, diff)
			}
		})
	}
}

// A snapshot's or a sweep's writes take their versions in order, with the
// message and the transaction's time; their deletions take the versions
// after them, with a tombstone each.
func TestStampUpsertsTombstones(t *testing.T) {
	t.Parallel()
	meta := engine.Meta{MessageID: msgID, Type: "SCHD", Styp: "RESP"}
	writes := []engine.Write{{Next: stored(1, day9, nil), Changed: []string{"FLNO"}}, {Next: stored(2, "", nil), Changed: []string{"FLNO"}}}
	versions := []int64{201, 202, 203}
	later := now.Add(time.Minute)
	assigned := engine.Stamp(writes, versions, meta, later)
	if diff := cmp.Diff(map[flight.FLID]int64{1: 201, 2: 202}, assigned); diff != "" {
		t.Fatalf("assigned (-want +got):\n%s", diff)
	}
	for _, w := range writes {
		if w.Next.LastMessageID != msgID || !w.Next.UpdatedAt.Equal(later) {
			t.Fatalf("write %s not stamped: %+v", w.Next.FLID, w.Next)
		}
	}
	up, err := engine.Upserts(writes, meta)
	if err != nil {
		t.Fatal(err)
	}
	if len(up) != 2 || up[0].Version != 201 || up[0].Day != day9 || up[1].Day != "" || up[1].State != doc(t, writes[1].Next) ||
		up[0].Notice != `{"CHANGED":["FLNO"],"FLID":"1","MSG_ID":500,"STATE_VERSION":201,"STYP":"RESP","TYPE":"SCHD"}` ||
		up[0].ChangeKind != engine.ChangeUpsert || up[0].Changes != "[]" {
		t.Fatalf("upserts %+v", up)
	}
	tombs, deleted, err := engine.Tombstones([]flight.State{stored(9, day9, nil)}, versions[2:], meta)
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Event{{FLID: 9, Version: 203, Day: day9, MessageID: msgID, Event: engine.EventDelete,
		Notice: `{"CHANGED":["DELETED"],"FLID":"9","MSG_ID":500,"STATE_VERSION":203,"STYP":"RESP","TYPE":"SCHD"}`,
		State:  `{"DELETED":true,"FLID":"9","STATE_VERSION":203}`, ChangeKind: engine.ChangeVictim, Changes: "[]"}}
	if diff := cmp.Diff(want, tombs); diff != "" || deleted[9] != 203 {
		t.Fatalf("tombstones %v (-want +got):\n%s", deleted, diff)
	}
}

// A history time far from its flight's day is flagged, not refused: the
// first record that set one names its flight and the times.
func TestImplausibleTimes(t *testing.T) {
	t.Parallel()
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	const window = 72 * time.Hour
	state := func(flid flight.FLID, day string, scalars map[string]string) *flight.State {
		s := stored(flid, day, nil)
		for k, v := range scalars {
			s.Scalars[k] = v
		}
		return &s
	}
	setTo := func(flid flight.FLID, tag, v string) flight.Commands {
		return flight.Commands{FLID: flid, Cmds: []flight.Command{{Tag: tag, Op: flight.OpSet, Value: v}}}
	}
	for name, c := range map[string]struct {
		records  []flight.Commands
		states   map[flight.FLID]*flight.State
		wantFLID flight.FLID
		want     []string
	}{
		"within the window": {
			records: []flight.Commands{setTo(1, "NAAT", "09SEP261200")},
			states:  map[flight.FLID]*flight.State{1: state(1, day9, map[string]string{"NAAT": "09SEP261200"})},
		},
		"a typo far from the day": {
			records:  []flight.Commands{setTo(1, "CNCL", "01JAN000000")},
			states:   map[flight.FLID]*flight.State{1: state(1, day9, map[string]string{"CNCL": "01JAN000000"})},
			wantFLID: 1, want: []string{"CNCL"},
		},
		"a stored far time the message did not set is not this message's": {
			records: []flight.Commands{setTo(1, "ESTT", "09SEP261200")},
			states:  map[flight.FLID]*flight.State{1: state(1, day9, map[string]string{"NEAT": "01JAN000000"})},
		},
		"every far history time of the first flight": {
			records: []flight.Commands{setTo(1, "ESTT", "09SEP261200"), setTo(2, "NEAT", "01JAN300000")},
			states: map[flight.FLID]*flight.State{1: state(1, day9, nil),
				2: state(2, day9, map[string]string{"NAAT": "01JAN300000", "NEAT": "01JAN300000"})},
			wantFLID: 2, want: []string{"NAAT", "NEAT"},
		},
		"no day and no SODT: nothing to compare with": {
			records: []flight.Commands{setTo(1, "CNCL", "01JAN000000")},
			states:  map[flight.FLID]*flight.State{1: state(1, "", map[string]string{"CNCL": "01JAN000000"})},
		},
		"a record that changed nothing has no state": {
			records: []flight.Commands{setTo(1, "CNCL", "01JAN000000")},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, tags := engine.ImplausibleTimes(c.records, c.states, shanghai, window)
			if f != c.wantFLID || !cmp.Equal(tags, c.want) {
				t.Fatalf("got %s %v, want %s %v", f, tags, c.wantFLID, c.want)
			}
		})
	}
}
