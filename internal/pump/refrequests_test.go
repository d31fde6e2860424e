package pump_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// refRequest is a reference-data request (RQRD) as req_track keeps it.
type refRequest struct {
	Type        string
	Seqn        int
	Status      string
	Sent        bool
	CompletedBy int64
}

// refRequests lists the reference-data requests, oldest first.
func (h *harness) refRequests() []refRequest {
	h.t.Helper()
	var out []refRequest
	if h.mem != nil {
		h.mem.View(func(d pumptest.Data) {
			for _, r := range d.Requests {
				if typ, ok := pumpdata.ReferenceRequestType(r.Kind); ok {
					out = append(out, refRequest{Type: typ, Seqn: r.Seqn, Status: r.Status, Sent: !r.SentAt.IsZero(),
						CompletedBy: d.Answers[r.ID].MessageID})
				}
			}
		})
		return out
	}
	rows, err := h.db.Query(h.t.Context(), `SELECT substr(kind, 6), seqn, status, sent_at IS NOT NULL, coalesce(completed_by, 0)
		FROM req_track WHERE kind LIKE 'RQRD:%' ORDER BY id`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r refRequest
		if err := rows.Scan(&r.Type, &r.Seqn, &r.Status, &r.Sent, &r.CompletedBy); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// ageReferenceData makes the reference-data requests for the lists of
// requested sent, opened and answered d earlier than they were, and the
// lists of replaced replaced d earlier.
func (h *harness) ageReferenceData(d time.Duration, requested, replaced []string) {
	h.t.Helper()
	if h.mem != nil {
		h.mem.Update(func(data *pumptest.Data) {
			for i, r := range data.Requests {
				if typ, ok := pumpdata.ReferenceRequestType(r.Kind); !ok || !slices.Contains(requested, typ) {
					continue
				}
				data.Requests[i].RequestedAt = r.RequestedAt.Add(-d)
				if !r.SentAt.IsZero() {
					data.Requests[i].SentAt = r.SentAt.Add(-d)
				}
				if a, ok := data.Answers[r.ID]; ok {
					a.At = a.At.Add(-d)
					data.Answers[r.ID] = a
				}
			}
			for _, typ := range replaced {
				if a, ok := data.Replaced[typ]; ok {
					a.At = a.At.Add(-d)
					data.Replaced[typ] = a
				}
			}
		})
		return
	}
	ago := fmt.Sprintf("%d seconds", int(d.Seconds()))
	kinds := make([]string, len(requested))
	for i, typ := range requested {
		kinds[i] = pumpdata.ReferenceRequestKind(typ)
	}
	if _, err := h.db.Exec(h.t.Context(), `UPDATE req_track SET requested_at = requested_at - $1::interval, sent_at = sent_at - $1::interval,
		completed_at = completed_at - $1::interval WHERE kind = ANY($2)`, ago, kinds); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.db.Exec(h.t.Context(), `UPDATE ref_list SET replaced_at = replaced_at - $1::interval WHERE kind = ANY($2)`, ago, replaced); err != nil {
		h.t.Fatal(err)
	}
}

// rqrdBody matches the RQRD of typ with SEQN seqn, as the pump's META
// (SNDR RMS, RCVR AODB by default) writes it.
func rqrdBody(typ string, seqn int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`^<MSG><META><SNDR>RMS</SNDR><RCVR>AODB</RCVR><SEQN>%06d</SEQN><DDTM>2026\d{10}</DDTM>`+
		`<TYPE>RQRD</TYPE><STYP>%s</STYP></META><RQRD><RTYP>%s</RTYP></RQRD></MSG>$`, seqn, typ, typ))
}

// wantOutbound checks the outbound table: one row per pattern, in order,
// under routing ids routing.
func (h *harness) wantOutbound(routing []string, bodies ...*regexp.Regexp) {
	h.t.Helper()
	out := h.outbound()
	if len(out) != len(bodies) {
		h.t.Fatalf("%d requests in the outbound table, want %d: %+v", len(out), len(bodies), out)
	}
	for i, o := range out {
		if !bodies[i].MatchString(o.Body) || o.Routing != routing[i] {
			h.t.Fatalf("outbound row %d = %s (routing %s), want %s (routing %s)", i+1, o.Body, o.Routing, bodies[i], routing[i])
		}
	}
}

// rqfdBody matches the RQFD of 9/9 with SEQN seqn.
func rqfdBody(seqn int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`<SEQN>%06d</SEQN>.*<TYPE>RQFD</TYPE><STYP>NONE</STYP>.*<STDB>09SEP260000</STDB>`, seqn))
}

// The lists requests.referenceData names go out when the pump starts
// leading, one RQRD each (TYPE RQRD, STYP and RTYP the list's TYPE, the
// SEQN sequence shared with the RQFD), under their own routing id, before
// the first mailbox row is processed: a RESP of gates waiting in the
// mailbox is the answer to the request just sent and completes it in its
// transaction, and replaces the list. A RESP of airlines from another
// sender than the request's receiver replaces that list too but answers
// nothing.
func TestReferenceDataRequestedAtStart(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		answer := h.put(h.refMessage("GLST", "RESP", "<GCOD>A1</GCOD>", "<GCOD>A2</GCOD>"))
		other := h.put(strings.Replace(h.refMessage("AIRL", "RESP", "<ITOP>CA</ITOP>"), "<SNDR>AODB</SNDR>", "<SNDR>OTHER</SNDR>", 1))
		h.drain(h.newPump())

		h.wantOutbound([]string{"AODB", "REFDATA", "REFDATA"}, rqfdBody(1), rqrdBody("AIRL", 2), rqrdBody("GLST", 3))
		h.wantRow(answer, pumpdata.StatusSucceeded, "")
		h.wantRow(other, pumpdata.StatusSucceeded, "")
		want := []refRequest{
			{Type: "AIRL", Seqn: 2, Status: pumpdata.RequestPending, Sent: true},
			{Type: "GLST", Seqn: 3, Status: pumpdata.RequestCompleted, Sent: true, CompletedBy: answer},
		}
		if diff := cmp.Diff(want, h.refRequests()); diff != "" {
			t.Fatalf("reference-data requests (-want +got):\n%s", diff)
		}
		if got := h.references("GLST"); len(got) != 2 || got["A1"].MessageID != answer {
			t.Fatalf("gates: %v, want A1 and A2 of the answer", got)
		}
		if got := h.references("AIRL"); len(got) != 1 || got["CA"].MessageID != other {
			t.Fatalf("airlines: %v, want CA of the unrequested RESP", got)
		}
	}, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB, referenceData: {types: [gates, AIRL], routingId: REFDATA}}")
}

// A pump that starts again within requests.referenceData.interval asks for
// no list asked for, answered or replaced whole (here: a DNLD nobody asked
// for) within it; one whose request went out longer ago is asked for
// again, with the next SEQN after the newest request's (an RQRD's: the
// sequence continues across restarts whatever the kind), and a request
// left unanswered expires when its list is asked for again. The routing id
// is requests.routingId unless referenceData names one.
func TestReferenceDataRequestsAcrossRestarts(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		routing := []string{"AODB", "AODB", "AODB"}
		bodies := []*regexp.Regexp{rqfdBody(1), rqrdBody("AIRL", 2), rqrdBody("GLST", 3)}
		h.drain(h.newPump())
		h.wantOutbound(routing, bodies...)

		answer := h.put(h.refMessage("GLST", "RESP", "<GCOD>A1</GCOD>"))
		dnld := h.put(h.refMessage("AIRL", "DNLD", "<ITOP>CA</ITOP>"))
		for range 3 {
			h.drain(h.newPump())
		}
		h.wantRow(answer, pumpdata.StatusSucceeded, "")
		h.wantRow(dnld, pumpdata.StatusSucceeded, "")
		h.wantOutbound(routing, bodies...)

		// A day later for every request and the gates; the airlines were
		// replaced by the DNLD just now.
		h.ageReferenceData(25*time.Hour, []string{"AIRL", "GLST"}, []string{"GLST"})
		h.drain(h.newPump())
		routing, bodies = append(routing, "AODB"), append(bodies, rqrdBody("GLST", 4))
		h.wantOutbound(routing, bodies...)

		// A day after the DNLD, the airlines are asked for again; their
		// first request, never answered, expires.
		h.ageReferenceData(25*time.Hour, []string{"AIRL"}, []string{"AIRL"})
		h.drain(h.newPump())
		routing, bodies = append(routing, "AODB"), append(bodies, rqrdBody("AIRL", 5))
		h.wantOutbound(routing, bodies...)
		want := []refRequest{
			{Type: "AIRL", Seqn: 2, Status: pumpdata.RequestExpired, Sent: true},
			{Type: "GLST", Seqn: 3, Status: pumpdata.RequestCompleted, Sent: true, CompletedBy: answer},
			{Type: "GLST", Seqn: 4, Status: pumpdata.RequestPending, Sent: true},
			{Type: "AIRL", Seqn: 5, Status: pumpdata.RequestPending, Sent: true},
		}
		if diff := cmp.Diff(want, h.refRequests()); diff != "" {
			t.Fatalf("reference-data requests (-want +got):\n%s", diff)
		}
	}, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB, referenceData: {types: [airlines, GLST], interval: 24h}}")
}

// A pump that dies after inserting a reference-data request into the
// outbound table and before recording it sent (here: the record undone)
// does not send it again: the next pump finds the row by its SEQN under
// the request's routing id and records it.
func TestReferenceDataRequestInsertedButNotRecordedIsNotSentTwice(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		h.drain(h.newPump())
		bodies := []*regexp.Regexp{rqfdBody(1), rqrdBody("GLST", 2)}
		routing := []string{"AODB", "REFDATA"}
		h.wantOutbound(routing, bodies...)
		if h.mem != nil {
			h.mem.Update(func(d *pumptest.Data) {
				for i, r := range d.Requests {
					if r.Kind == pumpdata.ReferenceRequestKind("GLST") {
						d.Requests[i].SentAt = time.Time{}
					}
				}
			})
		} else if _, err := h.db.Exec(t.Context(), `UPDATE req_track SET sent_at = NULL, outbox_id = NULL WHERE kind = 'RQRD:GLST'`); err != nil {
			t.Fatal(err)
		}
		h.drain(h.newPump())
		h.wantOutbound(routing, bodies...)
		if diff := cmp.Diff([]refRequest{{Type: "GLST", Seqn: 2, Status: pumpdata.RequestPending, Sent: true}}, h.refRequests()); diff != "" {
			t.Fatalf("reference-data requests (-want +got):\n%s", diff)
		}
		if h.db != nil {
			var outboxID int64
			if err := h.db.QueryRow(t.Context(), `SELECT outbox_id FROM req_track WHERE kind = 'RQRD:GLST'`).Scan(&outboxID); err != nil {
				t.Fatal(err)
			}
			if outboxID != h.outbound()[1].ID {
				t.Fatalf("the request is recorded with outbound row %d, want %d", outboxID, h.outbound()[1].ID)
			}
		}
	}, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB, referenceData: {types: [glst], routingId: REFDATA}}")
}

// No list is asked for unless requests.referenceData names it, nor any
// when requests are disabled; a RESP of a list nobody asked for is applied
// all the same (it is the whole list).
func TestReferenceDataRequestsOffByDefault(t *testing.T) {
	t.Parallel()
	for name, extra := range map[string]string{
		"default":  "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}",
		"disabled": "requests: {disabled: true, referenceData: {types: [all]}}",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, h *harness) {
				resp := h.put(h.refMessage("GLST", "RESP", "<GCOD>A1</GCOD>"))
				h.drain(h.newPump())
				h.wantRow(resp, pumpdata.StatusSucceeded, "")
				if got := h.references("GLST"); len(got) != 1 {
					t.Fatalf("gates: %v, want the RESP's A1", got)
				}
				var want []*regexp.Regexp
				if name == "default" {
					want = append(want, rqfdBody(1))
				}
				h.wantOutbound(slices.Repeat([]string{"AODB"}, len(want)), want...)
				if got := h.refRequests(); len(got) != 0 {
					t.Fatalf("reference-data requests recorded: %+v", got)
				}
			}, extra)
		})
	}
}
