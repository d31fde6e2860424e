package pump_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// failedNotice finds the RequestFailed notice of day among p's notices.
func failedNotice(p *pump.Pump, day string) (pump.Notice, bool) {
	for _, n := range p.DrainNotices() {
		if n.Kind == pump.NoticeRequestFailed && strings.Contains(n.Detail, day) {
			return n, true
		}
	}
	return pump.Notice{}, false
}

// A full-day answer that straddles midnight is refused whole (processing rules
// R5.2, validation five), and the AODB answers every re-ask the same way:
// the second identical refusal ends the request FAILED
// with the refusal, a RequestFailed notice (an Event) and the day in the
// status (the metric and the alert). On both backends.
func TestSecondIdenticalRefusalFailsTheRequest(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		p := h.newPump()
		h.drain(p) // 9/9 asked for
		first := h.put(h.schd("RESP", fltr(3, "CA3", "09"), fltr(4, "CA4", "10")))
		h.drain(p)
		h.wantRow(first, pumpdata.StatusDead, snapshot.ReasonMixedDays)
		if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestPending}) {
			t.Fatalf("after one refused answer: %v, want the request still PENDING", reqs)
		}
		if st := p.Status(); len(st.FailedRequests) != 0 {
			t.Fatalf("after one refused answer the status holds %+v", st.FailedRequests)
		}
		second := h.put(h.schd("RESP", fltr(3, "CA3", "09"), fltr(4, "CA4", "10")))
		h.drain(p)
		// Still refused whole, as the seed asks.
		h.wantRow(second, pumpdata.StatusDead, snapshot.ReasonMixedDays)
		if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestFailed}) {
			t.Fatalf("after two identical refused answers: %v, want the request FAILED", reqs)
		}
		st := p.Status()
		if len(st.FailedRequests) != 1 || st.FailedRequests[0].Day != "2026-09-09" || st.FailedRequests[0].MessageID != second ||
			!strings.HasPrefix(st.FailedRequests[0].Rejection, snapshot.ReasonMixedDays) {
			t.Fatalf("status failed requests %+v, want 9/9 failed by message %d with %s", st.FailedRequests, second, snapshot.ReasonMixedDays)
		}
		n, ok := failedNotice(p, "2026-09-09")
		if !ok || n.MessageID != second || !strings.Contains(n.Detail, snapshot.ReasonMixedDays) {
			t.Fatalf("no RequestFailed notice for 9/9 naming message %d and the refusal: %+v", second, n)
		}
	}, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}")
}

// An answer the decoder refuses (here a record's impossible CNCL) counts
// against the request as one the snapshot rules refuse: the AODB that
// answers every re-ask with the same broken RESP ends the request FAILED
// at the second, instead of being asked again at every timeout for ever.
// Another day's broken RESP does not count. On both backends.
func TestIdenticalDecoderRefusalsFailTheRequest(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		p := h.newPump()
		h.drain(p) // 9/9 asked for
		broken := func(day string) string {
			return h.schd("RESP", fltr(3, "CA3", day), fltr(4, "CA4", day, "<CNCL>31FEB261000</CNCL>"))
		}
		other := h.put(broken("10"))
		first := h.put(broken("09"))
		h.drain(p)
		h.wantRow(other, pumpdata.StatusDead, "BAD_TIME at MSG/SCHD/FLTR[2]/CNCL (FLID 4)")
		h.wantRow(first, pumpdata.StatusDead, "BAD_TIME at MSG/SCHD/FLTR[2]/CNCL (FLID 4)")
		if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestPending}) {
			t.Fatalf("after one refused answer (and another day's): %v, want the request still PENDING", reqs)
		}
		second := h.put(broken("09"))
		h.drain(p)
		h.wantRow(second, pumpdata.StatusDead, "BAD_TIME at MSG/SCHD/FLTR[2]/CNCL (FLID 4)")
		if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestFailed}) {
			t.Fatalf("after two identical refused answers: %v, want the request FAILED", reqs)
		}
		st := p.Status()
		if len(st.FailedRequests) != 1 || st.FailedRequests[0].MessageID != second || !strings.HasPrefix(st.FailedRequests[0].Rejection, "BAD_TIME") {
			t.Fatalf("status failed requests %+v, want 9/9 failed by message %d with BAD_TIME", st.FailedRequests, second)
		}
		if n, ok := failedNotice(p, "2026-09-09"); !ok || n.MessageID != second {
			t.Fatalf("no RequestFailed notice for 9/9 naming message %d: %+v", second, n)
		}
	}, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}")
}

// Two different refusals are no refusal repeated: the request stays live.
func TestDifferentRefusalsDoNotFailTheRequest(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		p := h.newPump()
		h.drain(p)
		h.put(h.schd("RESP", fltr(3, "CA3", "09"), fltr(4, "CA4", "10")))
		h.put(h.schd("RESP", fltr(3, "CA3", "09"), fltr(4, "CA4", "11")))
		h.drain(p)
		if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestPending}) {
			t.Fatalf("after two different refusals: %v, want the request still PENDING", reqs)
		}
	}, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}")
}

// The real sequence: the refused answer leaves the request live until it
// times out, the re-ask carries the refusal, its answer is refused the same
// way and the request FAILED; the day is not asked for again — not by a
// later round, not by a restarted pump — until an operator re-requests it
// (store.ReleaseFailedRequests, `flightfeed rerequest`), after which it is
// asked for at once, its refusals counted from zero, and an answer of the
// day completes it.
func TestFailedDayIsHeldUntilReRequested(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}")
	p := h.newPump()
	h.drain(p)
	mixed := func() int64 { return h.put(h.schd("RESP", fltr(3, "CA3", "09"), fltr(4, "CA4", "10"))) }
	mixed()
	h.drain(p)
	// The request times out (5 minutes ago, moved back) and is asked again.
	if _, err := h.db.Exec(t.Context(), `UPDATE req_track SET sent_at = sent_at - interval '6 minutes' WHERE status = 'PENDING'`); err != nil {
		t.Fatal(err)
	}
	h.runUntil(p, "the 9/9 request asked again", func() (bool, string) {
		reqs := h.requests()
		return len(reqs["2026-09-09"]) == 2 && len(h.outbound()) == 2, fmt.Sprint(reqs)
	})
	if n := h.count(`SELECT rejections FROM req_track WHERE status = 'PENDING'`); n != 1 {
		t.Fatalf("the re-ask carries %d refusals, want 1", n)
	}
	second := mixed()
	h.drain(p)
	if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestTimedOut, pumpdata.RequestFailed}) {
		t.Fatalf("after the re-ask's answer was refused the same way: %v, want TIMED_OUT then FAILED", reqs)
	}
	var rejection string
	var by int64
	if err := h.db.QueryRow(t.Context(), `SELECT rejection, completed_by FROM req_track WHERE status = 'FAILED'`).Scan(&rejection, &by); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rejection, snapshot.ReasonMixedDays+": RESP records span several operation days") || by != second {
		t.Fatalf("FAILED request: rejection %q by %d, want %s by message %d", rejection, by, snapshot.ReasonMixedDays, second)
	}

	// An hour later a restarted pump would ask for 9/9 again: it is held.
	if _, err := h.db.Exec(t.Context(), `UPDATE req_track SET sent_at = sent_at - interval '2 hours', requested_at = requested_at - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	again := h.newPump()
	h.drain(again)
	if n := len(h.outbound()); n != 2 {
		t.Fatalf("a restarted pump asked for the held day: %d requests sent, want 2", n)
	}
	if st := again.Status(); len(st.FailedRequests) != 1 || st.FailedRequests[0].Day != "2026-09-09" {
		t.Fatalf("restarted pump's status: failed requests %+v, want 9/9", st.FailedRequests)
	}

	// The operator re-requests the day.
	if n, err := h.store.ReleaseFailedRequests(t.Context(), "RQFD", "2026-09-09"); err != nil || n != 1 {
		t.Fatalf("release: %d, %v; want 1", n, err)
	}
	if n, err := h.store.ReleaseFailedRequests(t.Context(), "RQFD", "2026-09-09"); err != nil || n != 0 {
		t.Fatalf("release again: %d, %v; want 0 (nothing held)", n, err)
	}
	third := h.newPump()
	h.drain(third)
	if n := len(h.outbound()); n != 3 {
		t.Fatalf("after the re-request: %d requests sent, want 3", n)
	}
	if n := h.count(`SELECT rejections FROM req_track WHERE status = 'PENDING'`); n != 0 {
		t.Fatalf("the re-request carries %d refusals, want 0", n)
	}
	if st := third.Status(); len(st.FailedRequests) != 0 {
		t.Fatalf("after the re-request the status holds %+v", st.FailedRequests)
	}
	answer := h.put(h.schd("RESP", fltr(3, "CA3", "09")))
	h.drain(third)
	h.wantRow(answer, pumpdata.StatusSucceeded, "")
	if reqs := h.requests(); !slices.Equal(reqs["2026-09-09"], []string{pumpdata.RequestTimedOut, pumpdata.RequestFailed, pumpdata.RequestCompleted}) {
		t.Fatalf("after the answer: %v", reqs)
	}
}
