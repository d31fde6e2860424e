package engine_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// The examples of what a message does to a flight, as tables: SIS
// text in, the engine's decision out (the next states the store writes,
// the outbox rows it queues, byte for byte). Nothing here needs a
// service.

const (
	day9   = "2026-09-09"
	msgID  = 500
	ca100  = flight.FLID(121112312)
	firstV = 101 // the first version of every case's pool
)

var now = time.Date(2026, 9, 9, 2, 0, 0, 0, time.UTC)

// flop is a FLOP message of subtype styp carrying records.
func flop(styp string, records ...string) string {
	var b strings.Builder
	for _, r := range records {
		b.WriteString("<FLOP>" + r + "</FLOP>")
	}
	return `<MSG><META><SNDR>AODB</SNDR><RCVR>RMS</RCVR><SEQN>42</SEQN><DDTM>20260909101500</DDTM>` +
		`<TYPE>FLOP</TYPE><STYP>` + styp + `</STYP></META>` + b.String() + `</MSG>`
}

// stored is a flight as the database holds it: version 7, last changed by
// message 1, of day9 unless day says otherwise.
func stored(flid flight.FLID, day string, fn func(*flight.State)) flight.State {
	s := flight.NewState(flid)
	s.OperationDay, s.StateVersion, s.LastMessageID = day, 7, 1
	s.UpdatedAt = now.Add(-time.Hour)
	if fn != nil {
		fn(&s)
	}
	return s
}

// seedCA100 is processing rules R6.1's CA100 before its GTDT: gates G28 (1) and
// G33 (2), an estimate and a delay.
func seedCA100() flight.State {
	return stored(ca100, day9, func(s *flight.State) {
		s.Scalars["FLNO"], s.Scalars["ESTT"] = "CA100", "09SEP260900"
		s.Lists["GTDT"] = []flight.Item{{"GTNO": "1", "GATE": "G28"}, {"GTNO": "2", "GATE": "G33"}}
		s.Lists["DELY"] = []flight.Item{{"CODE": "81", "DURA": "20", "TEXT": "ATC"}}
	})
}

// next is s as a message changed it: fn's changes, the version v, the
// message and the transaction's time.
func next(s flight.State, v int64, fn func(*flight.State)) flight.State {
	out := s.Clone()
	if fn != nil {
		fn(&out)
	}
	out.StateVersion, out.LastMessageID, out.UpdatedAt = v, msgID, now
	return out
}

func notice(flid, styp string, v int64, changed ...string) string {
	return `{"CHANGED":["` + strings.Join(changed, `","`) + `"],"FLID":"` + flid + `","MSG_ID":500,"STATE_VERSION":` +
		strconv.FormatInt(v, 10) + `,"STYP":"` + styp + `","TYPE":"FLOP"}`
}

func doc(t *testing.T, s flight.State) string {
	t.Helper()
	d, err := flight.CanonicalJSON(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(d)
}

// outcome is what a run of messages leaves in a working set: what the
// store is to write, and what the messages reported.
type outcome struct {
	Gone      []flight.FLID
	Writes    []write
	Events    []event
	Created   []flight.FLID
	Missing   []flight.FLID
	Unchanged int
}

type write struct {
	Next    flight.State
	Changed []string
	IsNew   bool
}

type event struct {
	FLID    flight.FLID
	Version int64
	Day     string
	Notice  string
	Event   string
	State   string
}

// run decodes msgs and applies them in order to one working set over base,
// then returns what it holds to write. A refused message is err.
func run(t *testing.T, base []flight.State, msgs ...string) (outcome, error) {
	t.Helper()
	states := map[flight.FLID]flight.State{}
	var flids []flight.FLID
	for _, s := range base {
		states[s.FLID] = s
		flids = append(flids, s.FLID)
	}
	var decoded []*sis.Message
	for _, raw := range msgs {
		m, err := sis.DecodeString(raw, sis.Options{})
		if err != nil {
			return outcome{}, err
		}
		decoded = append(decoded, m)
		for _, r := range m.Records {
			flids = append(flids, r.FLID)
		}
		flids = append(flids, m.Deletions...)
	}
	versions := make([]int64, len(flids))
	for i := range versions {
		versions[i] = firstV + int64(i)
	}
	set := engine.NewWorkingSet(flids, states, versions, now)
	var out outcome
	for _, m := range decoded {
		meta := engine.Meta{MessageID: msgID, Type: m.Meta.Type, Styp: m.Meta.Styp}
		switch m.Kind {
		case sis.KindFDEL:
			eff, err := set.Delete(meta, m.Deletions)
			if err != nil {
				return outcome{}, err
			}
			out.Missing = append(out.Missing, eff.Missing...)
		default:
			cmds := make([]flight.Commands, len(m.Records))
			for i, r := range m.Records {
				cmds[i] = r.Commands
			}
			eff, err := set.Increment(meta, cmds)
			if err != nil {
				return outcome{}, err
			}
			out.Created = append(out.Created, eff.Created...)
			out.Unchanged += eff.Unchanged
		}
	}
	p := set.Pending()
	out.Gone = p.Gone
	for _, w := range p.Writes {
		out.Writes = append(out.Writes, write{Next: w.Next, Changed: w.Changed, IsNew: w.IsNew})
	}
	for _, e := range p.Events {
		if e.MessageID != msgID {
			t.Errorf("event of flight %s: message %d, want %d", e.FLID, e.MessageID, msgID)
		}
		out.Events = append(out.Events, event{FLID: e.FLID, Version: e.Version, Day: e.Day, Notice: e.Notice, Event: e.Event, State: e.State})
	}
	return out, nil
}

func TestSeedExamples(t *testing.T) {
	t.Parallel()
	gtdt := flop("GTDT", `<FLID>121112312</FLID><GTDT GTNO="1"><GATE>A1</GATE><GTYP>D</GTYP></GTDT><GTDT GTNO="3"><GATE>B2</GATE><GTYP>I</GTYP></GTDT>`)
	gates := []flight.Item{{"GTNO": "1", "GATE": "A1", "GTYP": "D"}, {"GTNO": "3", "GATE": "B2", "GTYP": "I"}}
	afterGTDT := next(seedCA100(), firstV, func(s *flight.State) { s.Lists["GTDT"] = gates })
	noGates := next(seedCA100(), firstV, func(s *flight.State) { delete(s.Lists, "GTDT") })
	one := stored(1, day9, func(s *flight.State) {
		s.Scalars["FLNO"] = "CA1"
		s.Lists["ROUT"] = []flight.Item{{"RTNO": "1", "APCD": "PEK"}}
	})
	two := stored(2, day9, func(s *flight.State) { s.Scalars["FLNO"] = "CA2" })
	created := func(flid flight.FLID, v int64, fn func(*flight.State)) flight.State {
		return next(flight.NewState(flid), v, fn)
	}
	estt77 := created(77, firstV, func(s *flight.State) { s.Scalars["ESTT"] = "09SEP261000" })
	recreated := created(1, firstV+1, func(s *flight.State) { s.Scalars["ESTT"] = "09SEP261000" })
	fdiv := next(seedCA100(), firstV, func(s *flight.State) {
		s.Anomalies["FDIV"] = flight.Item{"DDES": "HKG", "DDIR": "TO", flight.TextKey: "weather"}
	})
	withFDIV := seedCA100()
	withFDIV.Anomalies["FDIV"] = flight.Item{"DDES": "HKG", flight.TextKey: "weather"}
	fdivCleared := next(withFDIV, firstV, func(s *flight.State) { delete(s.Anomalies, "FDIV") })
	esttCleared := next(seedCA100(), firstV, func(s *flight.State) { delete(s.Scalars, "ESTT") })

	for name, c := range map[string]struct {
		base []flight.State
		msgs []string
		want outcome
		err  sis.Reason // the decoder refuses the message: nothing reaches the set
	}{
		// processing rules R6.1: a GTDT FLOP carrying (1, A1, D) and (3, B2, I)
		// replaces CA100's gates; nothing else moves (its day, its delay:
		// only GTDT is rewritten).
		"R6.1 example: GTDT replaces the gates": {
			base: []flight.State{seedCA100()},
			msgs: []string{gtdt},
			want: outcome{
				Writes: []write{{Next: afterGTDT, Changed: []string{"GTDT"}}},
				Events: []event{{FLID: ca100, Version: firstV, Day: day9, Event: engine.EventUpsert,
					Notice: notice("121112312", "GTDT", firstV, "GTDT"), State: doc(t, afterGTDT)}},
			},
		},
		"the same GTDT again changes nothing: no version, no event": {
			base: []flight.State{func() flight.State { s := afterGTDT.Clone(); s.StateVersion = 7; return s }()},
			msgs: []string{gtdt},
			want: outcome{Unchanged: 1},
		},
		"a collection whose items all carry sequence 0 is cleared": {
			base: []flight.State{seedCA100()},
			msgs: []string{flop("GTDT", `<FLID>121112312</FLID><GTDT GTNO="0"/><GTDT GTNO="00"><GATE>X</GATE></GTDT>`)},
			want: outcome{
				Writes: []write{{Next: noGates, Changed: []string{"GTDT"}}},
				Events: []event{{FLID: ca100, Version: firstV, Day: day9, Event: engine.EventUpsert,
					Notice: notice("121112312", "GTDT", firstV, "GTDT"), State: doc(t, noGates)}},
			},
		},
		"sequence 0 mixed with real items is an illegal message": {
			base: []flight.State{seedCA100()},
			msgs: []string{flop("GTDT", `<FLID>121112312</FLID><GTDT GTNO="0"/><GTDT GTNO="2"><GATE>B1</GATE></GTDT>`)},
			err:  sis.ReasonSeqZeroMixed,
		},
		"empty collection tags clear it": {
			base: []flight.State{seedCA100()},
			msgs: []string{flop("GTDT", `<FLID>121112312</FLID><GTDT/><GTDT></GTDT>`)},
			want: outcome{
				Writes: []write{{Next: noGates, Changed: []string{"GTDT"}}},
				Events: []event{{FLID: ca100, Version: firstV, Day: day9, Event: engine.EventUpsert,
					Notice: notice("121112312", "GTDT", firstV, "GTDT"), State: doc(t, noGates)}},
			},
		},
		"an empty scalar tag clears the scalar": {
			base: []flight.State{seedCA100()},
			msgs: []string{flop("ESTT", `<FLID>121112312</FLID><ESTT></ESTT>`)},
			want: outcome{
				Writes: []write{{Next: esttCleared, Changed: []string{"ESTT"}}},
				Events: []event{{FLID: ca100, Version: firstV, Day: day9, Event: engine.EventUpsert,
					Notice: notice("121112312", "ESTT", firstV, "ESTT"), State: doc(t, esttCleared)}},
			},
		},
		"an anomaly object sets it whole": {
			base: []flight.State{seedCA100()},
			msgs: []string{flop("FDIV", `<FLID>121112312</FLID><FDIV DDES="HKG" DDIR="TO">weather</FDIV>`)},
			want: outcome{
				Writes: []write{{Next: fdiv, Changed: []string{"FDIV"}}},
				Events: []event{{FLID: ca100, Version: firstV, Day: day9, Event: engine.EventUpsert,
					Notice: notice("121112312", "FDIV", firstV, "FDIV"), State: doc(t, fdiv)}},
			},
		},
		"an empty anomaly clears it": {
			base: []flight.State{withFDIV},
			msgs: []string{flop("FDIV", `<FLID>121112312</FLID><FDIV/>`)},
			want: outcome{
				Writes: []write{{Next: fdivCleared, Changed: []string{"FDIV"}}},
				Events: []event{{FLID: ca100, Version: firstV, Day: day9, Event: engine.EventUpsert,
					Notice: notice("121112312", "FDIV", firstV, "FDIV"), State: doc(t, fdivCleared)}},
			},
		},
		"an increment creates an unknown flight with no day, every field changed": {
			msgs: []string{flop("ESTT", `<FLID>77</FLID><ESTT>09SEP261000</ESTT>`)},
			want: outcome{
				Created: []flight.FLID{77},
				Writes:  []write{{Next: estt77, Changed: []string{"ESTT"}, IsNew: true}},
				Events: []event{{FLID: 77, Version: firstV, Event: engine.EventUpsert,
					Notice: notice("77", "ESTT", firstV, "ESTT"), State: doc(t, estt77)}},
			},
		},
		// processing rules R6.2: FDEL deletes by FLID, a tombstone with a fresh
		// version; a FLID that does not exist is an idempotent success.
		"FDEL deletes, a missing FLID succeeds": {
			base: []flight.State{one, two},
			msgs: []string{flop("FDEL", `<FLID>1</FLID>`, `<FLID>99</FLID>`)},
			want: outcome{
				Gone:    []flight.FLID{1},
				Missing: []flight.FLID{99},
				Events: []event{{FLID: 1, Version: firstV, Day: day9, Event: engine.EventDelete,
					Notice: `{"CHANGED":["DELETED"],"FLID":"1","MSG_ID":500,"STATE_VERSION":101,"STYP":"FDEL","TYPE":"FLOP"}`,
					State:  `{"DELETED":true,"FLID":"1","STATE_VERSION":101}`}},
			},
		},
		"FDEL of a flight already gone changes nothing": {
			base: []flight.State{two},
			msgs: []string{flop("FDEL", `<FLID>1</FLID>`)},
			want: outcome{Missing: []flight.FLID{1}},
		},
		// Re-created after its delete, a flight is new again (no day) and
		// its version rises past the tombstone's; only the newest version
		// of a flight carries its state.
		"FDEL then re-created: a new instance above the tombstone": {
			base: []flight.State{one},
			msgs: []string{flop("FDEL", `<FLID>1</FLID>`), flop("ESTT", `<FLID>1</FLID><ESTT>09SEP261000</ESTT>`)},
			want: outcome{
				Gone:    []flight.FLID{1},
				Created: []flight.FLID{1},
				Writes:  []write{{Next: recreated, Changed: []string{"ESTT"}, IsNew: true}},
				Events: []event{
					{FLID: 1, Version: firstV, Day: day9,
						Notice: `{"CHANGED":["DELETED"],"FLID":"1","MSG_ID":500,"STATE_VERSION":101,"STYP":"FDEL","TYPE":"FLOP"}`},
					{FLID: 1, Version: firstV + 1, Event: engine.EventUpsert,
						Notice: notice("1", "ESTT", firstV+1, "ESTT"), State: doc(t, recreated)},
				},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := run(t, c.base, c.msgs...)
			if c.err != "" {
				if r, ok := sis.ReasonOf(err); !ok || r != c.err {
					t.Fatalf("err = %v, want a refusal %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The GTDT example's KAFKA_SCHD document holds the gates as objects in
// input order, each with its sequence (processing rules R7.3).
func TestSeed001GTDTDocument(t *testing.T) {
	t.Parallel()
	got, err := run(t, []flight.State{seedCA100()},
		flop("GTDT", `<FLID>121112312</FLID><GTDT GTNO="1"><GATE>A1</GATE><GTYP>D</GTYP></GTDT><GTDT GTNO="3"><GATE>B2</GATE><GTYP>I</GTYP></GTDT>`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 1 || !strings.Contains(got.Events[0].State, `"GTDT":[{"GATE":"A1","GTNO":"1","GTYP":"D"},{"GATE":"B2","GTNO":"3","GTYP":"I"}]`) {
		t.Fatalf("events %+v", got.Events)
	}
	if w := got.Writes[0]; w.Next.OperationDay != day9 || !slices.Equal(w.Changed, []string{"GTDT"}) {
		t.Fatalf("write %+v", w)
	}
}
