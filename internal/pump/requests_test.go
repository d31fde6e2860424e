package pump_test

import (
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/snapshot"
	"github.com/flightfeed/flightfeed/internal/store"
)

type outbound struct {
	ID      int64
	Routing string
	Body    string
	Sent    sql.NullTime
}

func (h *harness) outbound() []outbound {
	h.t.Helper()
	rows, err := h.mbox.Query(`SELECT COUTMSGS_ID, ROUTINGID, COUTMSGS_CLOB_MSG, COUTMSGS_DATE_SENT FROM COUTMSGS ORDER BY COUTMSGS_ID`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var out []outbound
	for rows.Next() {
		var o outbound
		if err := rows.Scan(&o.ID, &o.Routing, &o.Body, &o.Sent); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

func (h *harness) requests() map[string][]string {
	h.t.Helper()
	rows, err := h.db.Query(h.t.Context(), `SELECT operation_day::text, status FROM req_track ORDER BY id`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var day, status string
		if err := rows.Scan(&day, &status); err != nil {
			h.t.Fatal(err)
		}
		out[day] = append(out[day], status)
	}
	return out
}

// The first request goes out before the first mailbox row is processed; a
// RESP of that day is the full-day snapshot and completes it; the next day
// is requested after it.
func TestRequestsAndTheirAnswers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "requests: {horizon: {from: 0, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}")
	// A snapshot of a day that was never requested is only a window.
	unsolicited := h.put(h.schd("RESP", fltr(7, "CA7", "10")))
	p := h.newPump()
	h.drain(p)

	out := h.outbound()
	if len(out) != 1 || out[0].Routing != "AODB" || out[0].Sent.Valid {
		t.Fatalf("outbound after start: %+v", out)
	}
	for _, want := range []string{"<TYPE>RQFD</TYPE>", "<STYP>NONE</STYP>", "<STDB>09SEP260000</STDB>", "<STDE>09SEP262359</STDE>", "<SEQN>000001</SEQN>"} {
		if !strings.Contains(out[0].Body, want) {
			t.Errorf("RQFD lacks %s:\n%s", want, out[0].Body)
		}
	}
	// The unsolicited RESP (processed after the request went out, but for
	// another day) upserted without setting the day.
	h.wantRow(unsolicited, store.StatusSucceeded, "")
	if _, _, flags, _ := h.procState(unsolicited); !slices.Contains(flags, snapshot.FlagUnsolicited) {
		t.Fatalf("unsolicited flags %v", flags)
	}
	if f := h.flights()[7]; f.OperationDay != "" {
		t.Fatal("an unsolicited RESP set a day")
	}

	// The AODB answers the 9/9 request.
	answer := h.put(h.schd("RESP", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
	h.drain(p)
	h.wantRow(answer, store.StatusSucceeded, "")
	if f := h.flights(); f[1].OperationDay != "2026-09-09" || f[2].OperationDay != "2026-09-09" {
		t.Fatalf("the answer was not a full-day snapshot: %+v", f)
	}
	reqs := h.requests()
	if !slices.Equal(reqs["2026-09-09"], []string{store.RequestCompleted}) {
		t.Fatalf("9/9 request: %v", reqs)
	}
	// Then 9/10 is requested (the next tick after the completion).
	h.runFor(p, 200*time.Millisecond)
	reqs = h.requests()
	if !slices.Equal(reqs["2026-09-10"], []string{store.RequestPending}) {
		t.Fatalf("9/10 request: %v", reqs)
	}
	if out := h.outbound(); len(out) != 2 || !strings.Contains(out[1].Body, "<STDB>10SEP260000</STDB>") || !strings.Contains(out[1].Body, "<SEQN>000002</SEQN>") {
		t.Fatalf("second request: %+v", out)
	}
	// A RESP for 9/10 now diff-deletes nothing but sets its day.
	h.put(h.schd("RESP", fltr(7, "CA7", "10")))
	h.drain(p)
	if f := h.flights()[7]; f.OperationDay != "2026-09-10" {
		t.Fatalf("9/10 answer: %+v", f)
	}
	if n := h.count(`SELECT version FROM schd_gen WHERE operation_day = '2026-09-10'`); n != 1 {
		t.Fatalf("9/10 generation %d", n)
	}
}

func TestUnansweredRequestTimesOutAndIsResentOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a 1 s request timeout twice (3.5 s)")
	}
	t.Parallel()
	h := newHarness(t, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 1s, routingId: AODB}")
	p := h.newPump()
	h.runFor(p, 3500*time.Millisecond)
	reqs := h.requests()["2026-09-09"]
	if len(reqs) != 2 || reqs[0] != store.RequestTimedOut {
		t.Fatalf("9/9 requests %v: want the first TIMED_OUT and one resend", reqs)
	}
	if n := len(h.outbound()); n != 2 {
		t.Fatalf("%d outbound requests, want 2", n)
	}
}
