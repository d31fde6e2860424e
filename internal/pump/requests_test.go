package pump_test

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

type outbound struct {
	ID      int64
	Routing string
	Body    string
	Sent    sql.NullTime
}

func (h *harness) outbound() []outbound {
	h.t.Helper()
	if h.inbox != nil {
		h.inbox.Lock()
		defer h.inbox.Unlock()
		var out []outbound
		for i, o := range h.inbox.Outbound {
			out = append(out, outbound{ID: int64(i + 1), Routing: o.RoutingID, Body: string(o.Body)})
		}
		return out
	}
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

// agePendingRequests makes the PENDING requests sent d earlier than they
// were.
func (h *harness) agePendingRequests(d time.Duration) {
	h.t.Helper()
	if h.mem != nil {
		h.mem.Update(func(data *pumptest.Data) {
			for i, r := range data.Requests {
				if r.Status == pumpdata.RequestPending {
					data.Requests[i].SentAt = r.SentAt.Add(-d)
				}
			}
		})
		return
	}
	if _, err := h.db.Exec(h.t.Context(), `UPDATE req_track SET sent_at = sent_at - $1::interval WHERE status = 'PENDING'`, fmt.Sprintf("%d seconds", int(d.Seconds()))); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) requests() map[string][]string {
	h.t.Helper()
	if h.mem != nil {
		out := map[string][]string{}
		h.mem.View(func(d pumptest.Data) {
			for _, r := range d.Requests {
				out[r.Day] = append(out[r.Day], r.Status)
			}
		})
		return out
	}
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
	eachBackend(t, requestsAndTheirAnswers, "requests: {horizon: {from: 0, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}")
}

func requestsAndTheirAnswers(t *testing.T, h *harness) {
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
	h.wantRow(unsolicited, pumpdata.StatusSucceeded, "")
	if _, _, flags, _ := h.procState(unsolicited); !slices.Contains(flags, snapshot.FlagUnsolicited) {
		t.Fatalf("unsolicited flags %v", flags)
	}
	if f := h.flights()[7]; f.OperationDay != "" {
		t.Fatal("an unsolicited RESP set a day")
	}

	// The AODB answers the 9/9 request.
	answer := h.put(h.schd("RESP", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
	h.drain(p)
	h.wantRow(answer, pumpdata.StatusSucceeded, "")
	if f := h.flights(); f[1].OperationDay != "2026-09-09" || f[2].OperationDay != "2026-09-09" {
		t.Fatalf("the answer was not a full-day snapshot: %+v", f)
	}
	reqs := h.requests()
	if !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestCompleted}) {
		t.Fatalf("9/9 request: %v", reqs)
	}
	if by := h.answeredBy("2026-09-09"); by != answer {
		t.Fatalf("9/9 request completed by message %d, want %d", by, answer)
	}
	// Then 9/10 is requested (the next tick after the completion).
	h.runUntil(p, "the 9/10 request sent", func() (bool, string) {
		reqs, out := h.requests(), h.outbound()
		return len(reqs["2026-09-10"]) > 0 && len(out) >= 2, fmt.Sprint(reqs, len(out), " outbound")
	})
	reqs = h.requests()
	if !slices.Equal(reqs["2026-09-10"], []string{pumpdata.RequestPending}) {
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
	if n := h.ledgerDay("2026-09-10").Version; n != 1 {
		t.Fatalf("9/10 generation %d", n)
	}
}

func TestUnansweredRequestTimesOutAndIsResentOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a 1 s request timeout twice (3.5 s)")
	}
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		p := h.newPump()
		// Long enough for the resend to time out too, and not to be sent a
		// third time: a wait for something that must not happen has no
		// condition to poll.
		h.runFor(p, 3500*time.Millisecond)
		reqs := h.requests()["2026-09-09"]
		if len(reqs) != 2 || reqs[0] != pumpdata.RequestTimedOut {
			t.Fatalf("9/9 requests %v: want the first TIMED_OUT and one resend", reqs)
		}
		if n := len(h.outbound()); n != 2 {
			t.Fatalf("%d outbound requests, want 2", n)
		}
	}, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 1s, routingId: AODB}")
}

// A pump that starts again (restart, takeover, crash loop) does not ask
// again for a day the AODB answered within requests.interval: it goes on
// with the next day of the horizon.
func TestRestartDoesNotAskAgainForAnAnsweredDay(t *testing.T) {
	t.Parallel()
	eachBackend(t, restartDoesNotAskAgainForAnAnsweredDay, "requests: {horizon: {from: 0, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}")
}

func restartDoesNotAskAgainForAnAnsweredDay(t *testing.T, h *harness) {
	first := h.newPump()
	h.drain(first) // 9/9 requested
	h.put(h.schd("RESP", fltr(1, "CA1", "09")))
	h.drain(first) // and answered; the pump stops before it asks for 9/10
	if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestCompleted}) || len(reqs["2026-09-10"]) != 0 {
		t.Fatalf("before the restart: %v, want 9/9 answered and 9/10 not yet asked for", reqs)
	}

	// Asking for 9/9 again would wait 5 minutes for its answer before 9/10.
	again := h.newPump()
	// Until the request is in the outbound table, not only recorded: the
	// pump records a request (req_track) before it sends it, and a pump
	// stopped between the two has not sent it yet.
	h.runUntil(again, "the restarted pump asks for 9/10", func() (bool, string) {
		reqs, out := h.requests(), h.outbound()
		return len(reqs["2026-09-10"]) > 0 && len(out) >= 2, fmt.Sprint(reqs, len(out), " outbound")
	})
	if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestCompleted}) {
		t.Fatalf("9/9, answered before the restart, was asked for again: %v", reqs)
	}
	if out := h.outbound(); len(out) != 2 || !strings.Contains(out[1].Body, "<STDB>10SEP260000</STDB>") {
		t.Fatalf("%d requests sent in all, want 9/9 once and then 9/10", len(out))
	}
}

// A RESP completes the newest PENDING request of its operation day, sender
// and request type (processing rules R7.1): the request asked the AODB, so a RESP
// from another sender with the requested day's records answers nothing —
// it is a window, flagged UNSOLICITED, the request stays PENDING and no
// day is set — and the AODB's own RESP then completes it.
func TestRESPFromAnotherSenderIsUnsolicited(t *testing.T) {
	t.Parallel()
	eachBackend(t, rESPFromAnotherSenderIsUnsolicited, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}")
}

func rESPFromAnotherSenderIsUnsolicited(t *testing.T, h *harness) {
	p := h.newPump()
	h.drain(p) // the request for 9/9 goes to the AODB
	other := h.put(strings.Replace(h.schd("RESP", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")), "<SNDR>AODB</SNDR>", "<SNDR>FIDS</SNDR>", 1))
	h.drain(p)
	h.wantRow(other, pumpdata.StatusSucceeded, "")
	if _, _, flags, _ := h.procState(other); !slices.Contains(flags, snapshot.FlagUnsolicited) {
		t.Fatalf("a RESP from another sender: flags %v, want %s", flags, snapshot.FlagUnsolicited)
	}
	if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestPending}) {
		t.Fatalf("a RESP from another sender answered the request: %v", reqs)
	}
	if f := h.flights(); len(f) != 2 || f[1].OperationDay != "" {
		t.Fatalf("a RESP from another sender was a full-day snapshot: %+v", f)
	}
	if n := h.ledgerDays(); n != 0 {
		t.Fatalf("a RESP from another sender started a generation (%d ledger rows)", n)
	}
	answer := h.put(h.schd("RESP", fltr(1, "CA1", "09")))
	h.drain(p)
	h.wantRow(answer, pumpdata.StatusSucceeded, "")
	if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestCompleted}) {
		t.Fatalf("the AODB's RESP did not complete the request: %v", reqs)
	}
	if f := h.flights(); f[1].OperationDay != "2026-09-09" {
		t.Fatalf("the AODB's RESP was not the full-day snapshot: %+v", f[1])
	}
}

// What docs/processing-rules.md says of windows and mixed days (processing rules R2, R5.2, R5.6):
// a DNLD window push is the normal case and raises no flag; a RESP over
// several days is DEAD(MIXED_OPERATION_DAYS), a failed validation whose
// trace row is ROLLED_BACK without DAY_MISMATCH, the flag of an ownership
// mismatch only.
func TestDNLDWindowIsUnflaggedAndMixedDaysIsNoDayMismatch(t *testing.T) {
	t.Parallel()
	eachBackend(t, dNLDWindowIsUnflaggedAndMixedDaysIsNoDayMismatch, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}")
}

func dNLDWindowIsUnflaggedAndMixedDaysIsNoDayMismatch(t *testing.T, h *harness) {
	p := h.newPump()
	h.drain(p)
	window := h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "10")))
	mixed := h.put(h.schd("RESP", fltr(3, "CA3", "09"), fltr(4, "CA4", "10")))
	h.drain(p)
	h.wantRow(window, pumpdata.StatusSucceeded, "")
	if _, _, flags, _ := h.procState(window); len(flags) != 0 {
		t.Fatalf("a DNLD window was flagged %v", flags)
	}
	if tr := h.traced(window); len(tr) != 1 || tr[0].Result != pumpdata.TraceCommitted || len(tr[0].Flags) != 0 {
		t.Fatalf("trace rows of the DNLD window: %+v, want one COMMITTED without flags", tr)
	}
	h.wantRow(mixed, pumpdata.StatusDead, snapshot.ReasonMixedDays)
	tr := h.traced(mixed)
	if len(tr) != 1 || tr[0].Result != pumpdata.TraceRolledBack {
		t.Fatalf("trace rows of the RESP over two days: %+v, want one ROLLED_BACK", tr)
	}
	if slices.Contains(tr[0].Flags, pump.FlagDayMismatch) {
		t.Fatalf("a RESP over two days was flagged %v", tr[0].Flags)
	}
}

// A crash-looping or restarting pump sends at most one full-day request per
// day per requests.interval: a restarted pump waits for the live request
// (PENDING, not timed out) of an earlier one instead of asking again, does
// not ask again for its day once it is answered, and does not resend a
// request that timed out (the next round does). Ten restarts over a horizon
// of two days, the AODB answering the first day between two of them and
// never the second, which times out: one RQFD per day in COUTMSGS.
func TestRestartStormSendsOneRequestPerDay(t *testing.T) {
	t.Parallel()
	eachBackend(t, restartStormSendsOneRequestPerDay, "requests: {horizon: {from: 0, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}")
}

func restartStormSendsOneRequestPerDay(t *testing.T, h *harness) {
	for i := range 10 {
		switch i {
		case 3:
			// The AODB answers 9/9 while this pump runs: it was asked by
			// the first one.
			h.put(h.schd("RESP", fltr(1, "CA1", "09")))
		case 7:
			// The 9/10 request, unanswered, is past requests.timeout.
			h.agePendingRequests(6 * time.Minute)
		}
		p := h.newPump()
		if i == 3 {
			h.runUntil(p, "a request sent after the answer", func() (bool, string) {
				return len(h.outbound()) >= 2, fmt.Sprint(h.requests())
			})
			continue
		}
		h.drain(p)
	}
	perDay := map[string]int{}
	for _, o := range h.outbound() {
		for _, day := range []string{"09SEP26", "10SEP26"} {
			if strings.Contains(o.Body, "<STDB>"+day+"0000</STDB>") {
				perDay[day]++
			}
		}
	}
	if perDay["09SEP26"] != 1 || perDay["10SEP26"] != 1 || len(h.outbound()) != 2 {
		t.Fatalf("requests sent by 10 restarts: %v (%d in all), want one per day; req_track %v", perDay, len(h.outbound()), h.requests())
	}
}

// A pump that dies after inserting its request into the outbound table and
// before recording it sent (here: the record undone) does not send it
// again on restart: the next pump finds the row by its SEQN and records it.
// Found by TestRestartStormSendsOneRequestPerDay, whose pump was stopped
// in that window now and then and sent a day's request twice.
func TestRequestInsertedButNotRecordedIsNotSentTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}")
	h.drain(h.newPump())
	if n := len(h.outbound()); n != 1 {
		t.Fatalf("first pump sent %d requests, want 1", n)
	}
	var seqn int
	if err := h.db.QueryRow(t.Context(), `UPDATE req_track SET sent_at = NULL, outbox_id = NULL RETURNING seqn`).Scan(&seqn); err != nil {
		t.Fatal(err)
	}
	h.drain(h.newPump())
	out := h.outbound()
	if len(out) != 1 {
		t.Fatalf("after the restart: %d requests in the outbound table, want the first one only: %+v", len(out), out)
	}
	var outboxID *int64
	var sent bool
	if err := h.db.QueryRow(t.Context(), `SELECT outbox_id, sent_at IS NOT NULL FROM req_track WHERE seqn = $1`, seqn).Scan(&outboxID, &sent); err != nil {
		t.Fatal(err)
	}
	if !sent || outboxID == nil || *outboxID != out[0].ID {
		t.Fatalf("the request is not recorded as sent with outbound row %d: sent %v, outbox_id %v", out[0].ID, sent, outboxID)
	}
}
