package verify

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

var t0 = time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC)

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

func TestCoverage(t *testing.T) {
	arch := []Archived{{ID: 3, Received: at(2)}, {ID: 1, Received: at(0)}, {ID: 2, Received: at(1)}}
	done := func(id int64, minutes int, status string) Processed {
		return Processed{ID: id, Received: at(minutes), Status: status}
	}
	cases := []struct {
		name      string
		archive   []Archived
		processed []Processed
		touches   []Touch
		want      []int64
		reason    string
	}{
		{name: "complete, mailbox order, unfinished left out",
			archive:   arch,
			processed: []Processed{done(3, 2, "SUCCEEDED"), done(1, 0, "DEAD"), done(2, 1, "SKIPPED"), done(4, 3, "FAILED")},
			touches:   []Touch{{ID: 3, What: "flight 7's last message"}},
			want:      []int64{1, 2, 3}},
		{name: "same receipt: id decides",
			archive:   []Archived{{ID: 9, Received: at(0)}, {ID: 5, Received: at(0)}},
			processed: []Processed{done(9, 0, "SUCCEEDED"), done(5, 0, "SUCCEEDED")},
			want:      []int64{5, 9}},
		{name: "a finished message pruned",
			archive:   arch[:1],
			processed: []Processed{done(1, 0, "SUCCEEDED"), done(3, 2, "SUCCEEDED")},
			reason:    "message 1 (received 2026-09-09T08:00:00Z, SUCCEEDED) was processed but is not in the archive: pruned by archive retention or processed before the archive existed; the archive starts at message 3"},
		{name: "a touch not archived",
			archive:   arch,
			processed: []Processed{done(1, 0, "SUCCEEDED")},
			touches:   []Touch{{ID: 8, What: "a snapshot of the day"}},
			reason:    "message 8 (a snapshot of the day) is not in the archive; the archive starts at message 1"},
		{name: "empty archive",
			processed: []Processed{done(1, 0, "SUCCEEDED")},
			reason:    "the archive is empty"},
		{name: "an applied message truncated",
			archive:   []Archived{{ID: 1, Received: at(0), Truncated: true}},
			processed: []Processed{done(1, 0, "SUCCEEDED")},
			reason:    "message 1's archived body is truncated"},
		{name: "a refused message truncated is replayed",
			archive:   []Archived{{ID: 1, Received: at(0), Truncated: true}},
			processed: []Processed{done(1, 0, "DEAD")},
			want:      []int64{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Coverage("2026-09-09", c.archive, c.processed, c.touches)
			if c.reason != "" {
				var nv *NotVerifiable
				if !errors.As(err, &nv) || !strings.Contains(nv.Reason, c.reason) {
					t.Fatalf("err = %v, want NotVerifiable with %q", err, c.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, a := range got {
				ids = append(ids, a.ID)
			}
			if !equal(ids, c.want) {
				t.Fatalf("replay %v, want %v", ids, c.want)
			}
		})
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRequestLog(t *testing.T) {
	order := []Archived{{ID: 10}, {ID: 11}, {ID: 12}, {ID: 13}}
	req := func(id int64, day, status string, opened, updated int, by int64, sent bool) LoggedRequest {
		r := LoggedRequest{Request: pumpdata.Request{ID: id, Kind: "RQFD", Day: day, Receiver: "AODB", Status: status, RequestedAt: at(opened)},
			UpdatedAt: at(updated), CompletedBy: by}
		if sent {
			r.SentAt = at(opened)
		}
		return r
	}
	log := NewRequestLog([]LoggedRequest{
		req(1, "2026-09-09", pumpdata.RequestCompleted, 0, 5, 12, true),
		req(2, "2026-09-10", pumpdata.RequestTimedOut, 6, 8, 0, true),
		req(3, "2026-09-11", pumpdata.RequestPending, 9, 9, 0, false),
	}, order)
	cases := []struct {
		msg     int64
		at      int
		wantDay string
	}{
		{msg: 10, at: 1, wantDay: "2026-09-09"},
		// Two messages of one live transaction (one time): the one before
		// the answer still saw the request live, the one after did not.
		{msg: 12, at: 5, wantDay: "2026-09-09"},
		{msg: 13, at: 5, wantDay: ""},
		{msg: 13, at: 7, wantDay: "2026-09-10"},
		{msg: 13, at: 8, wantDay: "2026-09-10"},
		{msg: 13, at: 8, wantDay: "2026-09-10"},
		{msg: 13, at: 10, wantDay: "2026-09-11"},
	}
	for _, c := range cases {
		got := log.Pending("RQFD", c.msg, at(c.at))
		day := ""
		if got != nil {
			day = got.Day
			if got.Status != pumpdata.RequestPending {
				t.Errorf("msg %d: status %s, want PENDING", c.msg, got.Status)
			}
		}
		if day != c.wantDay {
			t.Errorf("Pending(msg %d at +%dm) = %q, want %q", c.msg, c.at, day, c.wantDay)
		}
	}
	if log.Pending("RQRD", 10, at(1)) != nil {
		t.Error("another kind's request answered")
	}
	for _, c := range []struct {
		day, receiver string
		at            int
		want          bool
	}{
		{"2026-09-09", "AODB", 0, true},
		{"2026-09-09", "OTHER", 3, false},
		{"2026-09-10", "AODB", 5, false},
		{"2026-09-10", "AODB", 6, true},
		{"2026-09-11", "AODB", 20, false}, // never sent
	} {
		if got := log.RequestedBefore("RQFD", c.day, c.receiver, at(c.at)); got != c.want {
			t.Errorf("RequestedBefore(%s, %s, +%dm) = %v, want %v", c.day, c.receiver, c.at, got, c.want)
		}
	}
}

func state(flid flight.FLID, last int64, scalars map[string]string) flight.State {
	s := flight.NewState(flid)
	s.OperationDay, s.LastMessageID = "2026-09-09", last
	for k, v := range scalars {
		s.Scalars[k] = v
	}
	return s
}

func TestCompare(t *testing.T) {
	order := []Archived{{ID: 1}, {ID: 2}, {ID: 3}}
	ok := map[int64]Result{1: {Status: "SUCCEEDED"}, 2: {Status: "SUCCEEDED"}, 3: {Status: "SKIPPED", Reason: "DUPLICATE"}}
	led := Ledger{Present: true, Version: 40, LastMessageID: 2, Roster: []flight.FLID{7, 8}}
	served := []flight.State{state(7, 2, map[string]string{"FLNO": "CA1"}), state(8, 3, map[string]string{"FLNO": "CA2"})}

	t.Run("identical but for version and time", func(t *testing.T) {
		rebuilt := []flight.State{state(8, 3, map[string]string{"FLNO": "CA2"}), state(7, 2, map[string]string{"FLNO": "CA1"})}
		rebuilt[0].StateVersion, rebuilt[0].UpdatedAt = 999, t0
		rl := led
		rl.Version, rl.Roster = 3, []flight.FLID{8, 7}
		rep := Compare("2026-09-09", served, rebuilt, led, rl, order, ok, ok)
		if !rep.Identical() || rep.Flights != 2 || rep.Messages != 3 {
			t.Fatalf("report %+v, want identical, 2 flights, 3 messages", rep)
		}
	})
	t.Run("a field, a flight, the ledger and the parting message", func(t *testing.T) {
		rebuilt := []flight.State{state(7, 2, map[string]string{"FLNO": "CA1", "STND": "A1"}), state(9, 1, nil)}
		rl := led
		rl.LastMessageID = 1
		rr := map[int64]Result{1: {Status: "SUCCEEDED"}, 2: {Status: "DEAD", Reason: "LEDGER_INCONSISTENT"}, 3: {Status: "SUCCEEDED"}}
		rep := Compare("2026-09-09", served, rebuilt, led, rl, order, ok, rr)
		if rep.Identical() || len(rep.Diffs) != 3 {
			t.Fatalf("diffs %+v, want 3", rep.Diffs)
		}
		d := rep.Diffs[0]
		if d.FLID != 7 || d.Kind != Differs || len(d.Changes) != 1 || d.Changes[0].Tag != "STND" || d.Changes[0].Op != flight.ChangeClear ||
			string(d.Changes[0].Old) != `"A1"` || d.Changes[0].New != nil {
			t.Errorf("flight 7: %+v, want STND Clear \"A1\"", d)
		}
		if rep.Diffs[1].FLID != 8 || rep.Diffs[1].Kind != OnlyServed || rep.Diffs[2].FLID != 9 || rep.Diffs[2].Kind != OnlyRebuilt {
			t.Errorf("diffs %+v, want 8 only served, 9 only rebuilt", rep.Diffs[1:])
		}
		if rep.Ledger == nil || rep.Ledger.What != "message of the latest full-day snapshot" {
			t.Errorf("ledger %+v", rep.Ledger)
		}
		if rep.Parting == nil || rep.Parting.Served.ID != 2 || rep.Parting.Rebuilt.Reason != "LEDGER_INCONSISTENT" {
			t.Errorf("parting %+v, want message 2", rep.Parting)
		}
	})
	t.Run("last message differs", func(t *testing.T) {
		rebuilt := []flight.State{state(7, 1, map[string]string{"FLNO": "CA1"}), state(8, 3, map[string]string{"FLNO": "CA2"})}
		rep := Compare("2026-09-09", served, rebuilt, led, led, order, ok, ok)
		if len(rep.Diffs) != 1 || rep.Diffs[0].Changes[0].Tag != LastMessageField || string(rep.Diffs[0].Changes[0].Old) != "1" {
			t.Fatalf("diffs %+v", rep.Diffs)
		}
	})
	t.Run("roster", func(t *testing.T) {
		rl := led
		rl.Roster = []flight.FLID{7}
		if rep := Compare("2026-09-09", served, served, led, rl, order, ok, ok); rep.Ledger == nil || rep.Ledger.What != "roster" {
			t.Fatalf("ledger %+v", rep.Ledger)
		}
	})
}
