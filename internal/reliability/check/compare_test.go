package check

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
)

func state(flid string, v int, extra string) string {
	return fmt.Sprintf(`{"FLID":"%s","STATE_VERSION":%d,"UPDATED_AT":"2026-12-04T10:00:%02dZ"%s}`, flid, v, v%60, extra)
}

func notice(flid string, v, msg int) string {
	return fmt.Sprintf(`{"CHANGED":["ESTT"],"FLID":"%s","MSG_ID":%d,"STATE_VERSION":%d,"STYP":"ESTT","TYPE":"FLOP"}`, flid, msg, v)
}

func rec(offset int64, flid, value string) dispatchtest.Record {
	return dispatchtest.Record{Partition: 0, Offset: offset, Key: flid, Value: []byte(value)}
}

// outcome is a consistent drained run whose versions start at base:
// flights 1 and 2, flight 3 deleted.
func outcome(base int) Outcome {
	s1, s2 := state("1", base+1, `,"ESTT":"x"`), state("2", base+2, "")
	return Outcome{
		Export:    map[string]string{"1": s1, "2": s2},
		Ledger:    []string{`{"day":"2026-12-04","version":1,"last_message_id":3,"flights":2}`},
		Mailbox:   []MailboxRow{{1, true, "SUCCEEDED", ""}, {2, true, "DEAD", "MALFORMED: x"}, {3, true, "SUCCEEDED", ""}},
		ProcState: []string{"1 SUCCEEDED   0", "2 DEAD MALFORMED x 0", "3 SUCCEEDED   0"},
		State: []dispatchtest.Record{rec(0, "1", state("1", base, "")), rec(1, "3", state("3", base, "")), rec(2, "1", s1), rec(3, "2", s2),
			rec(4, "3", fmt.Sprintf(`{"DELETED":true,"FLID":"3","STATE_VERSION":%d}`, base+3))},
		Notice: []dispatchtest.Record{rec(0, "1", notice("1", base+1, 1)), rec(1, "2", notice("2", base+2, 3)), rec(2, "1", notice("1", base+4, 2))},
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(o *Outcome)
		want   Counts
	}{
		{name: "the same run, other versions and times", mutate: func(*Outcome) {}},
		{name: "a state record and a notice sent again", want: Counts{Redelivered: 2}, mutate: func(o *Outcome) {
			o.State = append(o.State, rec(5, "2", o.Export["2"]))
			o.Notice = append(o.Notice, o.Notice[0])
		}},
		{name: "a mailbox result missing", want: Counts{Lost: 1}, mutate: func(o *Outcome) {
			o.Mailbox[2] = MailboxRow{ID: 3}
		}},
		{name: "an exported flight differs, and so its last record", want: Counts{Lost: 1}, mutate: func(o *Outcome) {
			o.Export["2"] = state("2", 13, `,"GATE":"B1"`)
			o.State = append(o.State, rec(5, "2", o.Export["2"]))
		}},
		{name: "the last state record is not the export", want: Counts{Lost: 1}, mutate: func(o *Outcome) {
			o.State = o.State[:3]
			o.State = append(o.State, rec(4, "3", `{"DELETED":true,"FLID":"3","STATE_VERSION":13}`))
		}},
		{name: "a deletion not delivered", want: Counts{Lost: 1}, mutate: func(o *Outcome) {
			o.State = o.State[:4]
		}},
		{name: "a version goes back", want: Counts{Regressions: 1, Redelivered: 1}, mutate: func(o *Outcome) {
			o.State = append(o.State, rec(5, "1", state("1", 9, `,"ESTT":"old"`)), rec(6, "1", o.Export["1"]))
		}},
		{name: "two states at one version", want: Counts{Regressions: 1, Redelivered: 1}, mutate: func(o *Outcome) {
			o.State = append(o.State, rec(5, "1", state("1", 11, `,"ESTT":"y"`)), rec(6, "1", o.Export["1"]))
		}},
		{name: "a version below an earlier one but not below the last", want: Counts{Regressions: 2, Redelivered: 2}, mutate: func(o *Outcome) {
			// v13, then v10 (a repeat of the first record: below 13) and
			// v11 (the export again: above 10, the last, but below 13).
			o.State = append(o.State, rec(5, "1", state("1", 13, `,"ESTT":"z"`)), rec(6, "1", string(o.State[0].Value)), rec(7, "1", o.Export["1"]))
		}},
		{name: "a FLID in two partitions", want: Counts{Regressions: 1, Redelivered: 1}, mutate: func(o *Outcome) {
			o.State[3].Partition = 1
			o.State = append(o.State, dispatchtest.Record{Partition: 0, Offset: 9, Key: "2", Value: []byte(o.Export["2"])})
		}},
		{name: "an older notice delivered late", want: Counts{Regressions: 1}, mutate: func(o *Outcome) {
			o.Notice = []dispatchtest.Record{o.Notice[2], o.Notice[1], o.Notice[0]}
		}},
		{name: "a message applied twice", want: Counts{Duplicated: 2}, mutate: func(o *Outcome) {
			o.Notice = append(o.Notice, rec(2, "1", notice("1", 14, 1)))
			o.ProcState = append(o.ProcState, "3 SUCCEEDED   1")
		}},
		{name: "a ledger version more", want: Counts{Lost: 1, Duplicated: 1}, mutate: func(o *Outcome) {
			o.Ledger[0] = `{"day":"2026-12-04","version":2,"last_message_id":3,"flights":2}`
		}},
		{name: "a notice missing", want: Counts{Lost: 1}, mutate: func(o *Outcome) {
			o.Notice = o.Notice[:2]
		}},
		{name: "left pending: outbox, parked, write-back", want: Counts{Lost: 2 + 1 + 5}, mutate: func(o *Outcome) {
			o.OutboxPending, o.OutboxParked, o.BackfillPending = 2, 1, 5
		}},
		{name: "a flight the clean run does not have", want: Counts{Duplicated: 1}, mutate: func(o *Outcome) {
			o.Export["4"] = state("4", 15, "")
			o.State = append(o.State, rec(5, "4", o.Export["4"]))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, got := outcome(0), outcome(10)
			if r := Self(ref); !r.OK() || r.Counts != (Counts{}) {
				t.Fatalf("the reference is not consistent: %+v", r)
			}
			tc.mutate(&got)
			r := Compare(ref, got)
			if diff := cmp.Diff(tc.want, r.Counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s\nproblems: %q", diff, r.Problems)
			}
			if ok := tc.want.Lost+tc.want.Regressions+tc.want.Duplicated == 0; r.OK() != ok {
				t.Errorf("OK() = %v, want %v; problems %q", r.OK(), ok, r.Problems)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	want := Expected{Rows: 3, Dead: []int64{2}, Flights: []string{"1", "2"}, Ledger: map[string]int64{"2026-12-04": 1}}
	if err := Validate(outcome(0), want); err != nil {
		t.Errorf("a full reference: %v", err)
	}
	for name, mutate := range map[string]func(o *Outcome){
		"a row unprocessed":           func(o *Outcome) { o.Mailbox[1].Processed = false },
		"a row missing":               func(o *Outcome) { o.Mailbox = o.Mailbox[:2] },
		"a malformed row SUCCEEDED":   func(o *Outcome) { o.Mailbox[1].Result = "SUCCEEDED" },
		"a good row DEAD":             func(o *Outcome) { o.Mailbox[2].Result = "DEAD" },
		"a flight missing":            func(o *Outcome) { delete(o.Export, "2") },
		"a flight more":               func(o *Outcome) { o.Export["3"] = state("3", 3, "") },
		"the day at another version":  func(o *Outcome) { o.Ledger[0] = `{"day":"2026-12-04","version":2}` },
		"another day":                 func(o *Outcome) { o.Ledger = append(o.Ledger, `{"day":"2026-12-05","version":1}`) },
		"nothing on the notice topic": func(o *Outcome) { o.Notice = nil },
	} {
		o := outcome(0)
		mutate(&o)
		if err := Validate(o, want); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}

func TestExpectDay(t *testing.T) {
	e := ExpectDay("2026-12-04", nil, 600)
	// The RESP's DayFlights and the ad-hoc ADFT's; the 600th row comes
	// after a DNLD window push that put back the flight the round before's
	// FDEL deleted.
	if len(e.Flights) != DayFlights+1 {
		t.Errorf("%d flights, want %d: %v", len(e.Flights), DayFlights, e.Flights)
	}
	// Two malformed rows a round of the traffic.
	if len(e.Dead) < 2 || len(e.Dead)%2 != 0 || e.Ledger["2026-12-04"] != 1 || e.Rows != 600 {
		t.Errorf("ExpectDay: %+v", e)
	}
}

func TestSummaryString(t *testing.T) {
	s := Summary{Scenario: "crash/after-commit", Runs: 3, Faults: 2, Messages: 2000, Counts: Counts{Redelivered: 4}}
	want := "reliability crash/after-commit: runs 3, faults injected 2, messages 2000, lost 0, regressions 0, duplicated effects 0, redelivered 4"
	if got := s.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := s.Add(s); got.Runs != 6 || got.Faults != 4 || got.Messages != 4000 || got.Redelivered != 8 {
		t.Errorf("Add: %+v", got)
	}
}

func TestDay(t *testing.T) {
	rows := Day("2026-12-04", nil, 2000)
	if len(rows) != 2000 {
		t.Fatalf("%d rows, want 2000", len(rows))
	}
	if again := Day("2026-12-04", nil, 2000); !cmp.Equal(rows, again) {
		t.Error("Day is not deterministic")
	}
}

// dayOutcome is a clean run of a two-row workload on day (the simulator's
// FLIDs of the day, its SIS times and dates), ESTT its flight's estimate.
func dayOutcome(day string, estt string) (Expected, Outcome) {
	rows := Day(day, nil, 2)
	e := ExpectDay(day, nil, 2)
	flid := firstFLID(rows[0])
	d, _ := time.Parse(time.DateOnly, day)
	sis := strings.ToUpper(d.Format("02Jan06"))
	next := strings.ToUpper(d.AddDate(0, 0, 1).Format("02Jan06"))
	doc := fmt.Sprintf(`{"FLID":"%d","STATE_VERSION":7,"OPERATION_DAY":"%s","UPDATED_AT":"%sT02:00:00Z","SODT":"%s2330","ESTT":"%s%s"}`,
		flid, day, day, sis, next, estt)
	return e, Outcome{
		Export:    map[string]string{fmt.Sprint(flid): doc},
		Ledger:    []string{fmt.Sprintf(`{"day":"%s","version":1,"last_message_id":1,"flights":1}`, day)},
		Mailbox:   []MailboxRow{{1, true, "SUCCEEDED", ""}, {2, true, "DEAD", fmt.Sprintf("DAY_MISMATCH: flight %d is of %s", flid, day)}},
		ProcState: []string{"1 SUCCEEDED   {}", fmt.Sprintf("2 DEAD DAY_MISMATCH flight %d is of %s {}", flid, day)},
		Notice:    []dispatchtest.Record{rec(0, fmt.Sprint(flid), fmt.Sprintf(`{"FLID":"%d","MSG_ID":1,"STATE_VERSION":7}`, flid))},
	}
}

// The pinned rendering of a clean run does not depend on the day it ran
// (days and the day's FLIDs are written relative to it), and a change of
// a flight's contents, a row's result or a message's notices shows.
func TestPinned(t *testing.T) {
	e1, o1 := dayOutcome("2026-12-04", "0015")
	e2, o2 := dayOutcome("2027-12-31", "0015")
	p1, p2 := e1.Pinned(o1), e2.Pinned(o2)
	if d := pinnedDiff(p2, p1); d != "" {
		t.Fatalf("the same run on another day renders otherwise:\n%s\n%s", d, p1)
	}
	for _, want := range []string{`"FLID":"F+1"`, `"OPERATION_DAY":"{D}"`, `"SODT":"{D}2330"`, `"ESTT":"{D+1}0015"`,
		"row 1: SUCCEEDED \"\" | proc_state SUCCEEDED   {} | notices 1", "flight F+1 is of {D}"} {
		if !strings.Contains(p1, want) {
			t.Errorf("rendering lacks %q:\n%s", want, p1)
		}
	}
	for name, mutate := range map[string]func(o *Outcome){
		"a field dropped": func(o *Outcome) {
			for k, v := range o.Export {
				o.Export[k] = strings.Replace(v, `,"ESTT":`, `,"X":`, 1)
			}
		},
		"a row's result": func(o *Outcome) { o.Mailbox[0].Result = "SKIPPED" },
		"a processing reason": func(o *Outcome) {
			o.ProcState[1] = strings.Replace(o.ProcState[1], "DAY_MISMATCH", "LEDGER_INCONSISTENT", 1)
		},
		"a notice more": func(o *Outcome) {
			o.Notice = append(o.Notice, rec(1, "x", `{"FLID":"x","MSG_ID":1,"STATE_VERSION":8}`))
		},
	} {
		e, o := dayOutcome("2027-12-31", "0015")
		mutate(&o)
		if pinnedDiff(e.Pinned(o), p1) == "" {
			t.Errorf("%s: renders as the pinned run", name)
		}
	}
}
