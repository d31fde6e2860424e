package pump_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// restamp gives a copy of a harness message sent again at another time,
// under DTTM (the other tag of the send time) when dttm is set.
func restamp(body, at string, dttm bool) string {
	tag := "DDTM"
	if dttm {
		tag = "DTTM"
	}
	return strings.Replace(body, "<DDTM>20260909100000</DDTM>", fmt.Sprintf("<%s>%s</%[1]s>", tag, at), 1)
}

func gateFLOP(h *harness, seqn int, gate string) string {
	body := h.flop("GTDT", 7, fmt.Sprintf(`<GTDT GTNO="1"><GATE>%s</GATE></GTDT>`, gate))
	return strings.Replace(body, fmt.Sprintf("<SEQN>%d</SEQN>", h.seqn+100), fmt.Sprintf("<SEQN>%d</SEQN>", seqn), 1)
}

// A re-sent message whose only change is its send time is a duplicate
// (processing rules R10.4): SEQN 301 sets C1, SEQN 302 sets C9, and 301
// re-stamped — in the same batch or a later one, as DDTM or DTTM — is
// SKIPPED(DUPLICATE) and changes nothing; 301 with another gate is another
// payload under the same identity, processed and flagged SEQN_REUSE.
func TestRestampedCopyIsADuplicate(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		c1 := gateFLOP(h, 301, "C1")
		first := h.put(c1)
		h.put(gateFLOP(h, 302, "C9"))
		sameBatch := h.put(restamp(c1, "20260909100500", false))
		p := h.newPump()
		h.drain(p)
		later := h.put(restamp(c1, "20260909101000123", true))
		h.drain(p)

		h.wantRow(first, pumpdata.StatusSucceeded, "")
		for _, id := range []int64{sameBatch, later} {
			h.wantRow(id, pumpdata.StatusSkipped, pump.ReasonDuplicate)
			if n, _ := h.events(id); n != 0 {
				t.Fatalf("the re-stamped copy %d queued %d events", id, n)
			}
		}
		f := h.flights()[7]
		if got := f.Lists["GTDT"]; len(got) != 1 || got[0]["GATE"] != "C9" {
			t.Fatalf("gates after the re-stamped copies: %+v, want C9", got)
		}
		version := f.StateVersion

		other := h.put(gateFLOP(h, 301, "C5"))
		h.drain(p)
		h.wantRow(other, pumpdata.StatusSucceeded, "")
		if _, _, flags, _ := h.procState(other); !slices.Contains(flags, pump.FlagSeqnReuse) {
			t.Fatalf("same identity, other content: flags %v, want %s", flags, pump.FlagSeqnReuse)
		}
		if f := h.flights()[7]; f.StateVersion == version || f.Lists["GTDT"][0]["GATE"] != "C5" {
			t.Fatalf("same identity, other content was not applied: %+v", f)
		}
	})
}

// A whole RESP re-sent with a new send time is SKIPPED: the day's version,
// roster and flights stay as they are, and a FLOP applied after the first
// copy is not undone.
func TestRestampedRESPIsADuplicate(t *testing.T) {
	t.Parallel()
	eachBackend(t, restampedRESPIsADuplicate, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}")
}

func restampedRESPIsADuplicate(t *testing.T, h *harness) {
	p := h.newPump()
	h.drain(p) // sends the request for 9/9
	resp := h.schd("RESP", fltr(1, "CA1", "09", `<GTDT GTNO="1"><GATE>A1</GATE></GTDT>`), fltr(2, "CA2", "09"))
	answer := h.put(resp)
	h.put(h.flop("GTDT", 1, `<GTDT GTNO="1"><GATE>B7</GATE></GTDT>`))
	h.drain(p)
	copyOf := h.put(restamp(resp, "20260909120000", true))
	h.drain(p)

	h.wantRow(answer, pumpdata.StatusSucceeded, "")
	h.wantRow(copyOf, pumpdata.StatusSkipped, pump.ReasonDuplicate)
	if v := h.ledgerDay("2026-09-09").Version; v != 1 {
		t.Fatalf("day version %d after the re-stamped RESP, want 1", v)
	}
	if got := h.flights()[1].Lists["GTDT"]; len(got) != 1 || got[0]["GATE"] != "B7" {
		t.Fatalf("the re-stamped RESP undid the later FLOP: gates %+v", got)
	}
	if n, _ := h.events(copyOf); n != 0 {
		t.Fatalf("the re-stamped RESP queued %d events", n)
	}
}

// The mailbox row's identity keeps the raw text's digest: a row on a
// reused id (same received time) holding a re-stamped copy is another
// mailbox row — its predecessor moves to msg_id_reuse — and, as a copy of
// a processed message, SKIPPED(DUPLICATE), not the old row written back.
func TestReusedIDWithARestampedCopyIsAnotherRow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	body := gateFLOP(h, 301, "C1")
	id := h.put(body)
	h.drain(h.newPump())
	if _, err := h.mbox.Exec(`UPDATE CMINMSGS SET CMINMSGS_CLOB_MSG = ?, CMINMSGS_DATE_PROCESSED = NULL, CMINMSGS_PROC_RESULT = NULL,
		CMINMSGS_PROC_NOTE = NULL WHERE CMINMSGS_ID = ?`, restamp(body, "20260909110000", false), id); err != nil {
		t.Fatal(err)
	}
	h.drain(h.newPump())
	h.wantRow(id, pumpdata.StatusSkipped, pump.ReasonDuplicate)
	if n := h.count(`SELECT count(*) FROM msg_id_reuse WHERE message_id = $1 AND old_status = 'SUCCEEDED'`, id); n != 1 {
		t.Fatalf("msg_id_reuse holds %d predecessors of row %d, want 1", n, id)
	}
}
