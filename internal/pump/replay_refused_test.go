package pump_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// replay --policy skip-conflicts skips the records the decoder refuses the
// way it skips day mismatches: a full-day snapshot DEAD
// for one record's bad CNCL is applied without that record; the note and
// the trace row name it by its FLID, position and refusal; its flight is
// left untouched — not rewritten, not diff-deleted, still in the day's
// roster — while the rest of the snapshot applies (a new flight, an
// update, a diff-delete).
func TestSkipConflictsReplaySkipsRefusedRecords(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09"), fltr(3, "CA3", "09")))
		bad := h.put(h.schd("DNLD", fltr(1, "CA1X", "09"), fltr(2, "CA2X", "09", "<CNCL>31FEB261000</CNCL>"), fltr(4, "CA4", "09")))
		p := h.newPump()
		h.drain(p)
		h.wantRow(bad, pumpdata.StatusDead, "BAD_TIME at MSG/SCHD/FLTR[2]/CNCL (FLID 2)")
		before := h.flights()[2]

		h.requestReplay(bad, pumpdata.ReplaySkipConflicts)
		h.runUntil(p, "the replay done", func() (bool, string) {
			r := h.replayOf(bad)
			return r.ID != 0 && r.State != pumpdata.ReplayPending, fmt.Sprint(r)
		})
		r := h.replayOf(bad)
		const named = "FLID 2 (FLTR[2]): BAD_TIME at MSG/SCHD/FLTR[2]/CNCL (FLID 2)"
		if r.State != pumpdata.ReplayDone || r.Result != pumpdata.StatusSucceeded || !strings.Contains(r.Note, "1 refused record(s) left out") ||
			!strings.Contains(r.Note, named) {
			t.Fatalf("replay %+v: want DONE, SUCCEEDED, its note naming %q", r, named)
		}
		var detail string
		for _, tr := range h.traced(bad) {
			if tr.Result == "COMMITTED" {
				detail = tr.Detail
			}
		}
		if !strings.Contains(detail, named) {
			t.Fatalf("the replay's COMMITTED trace row's detail %q does not name %q (rows %+v)", detail, named, h.traced(bad))
		}

		f := h.flights()
		if f[1].Scalars["FLNO"] != "CA1X" || f[4].OperationDay != "2026-09-09" {
			t.Fatalf("the rest of the snapshot did not apply: 1 %+v, 4 %+v", f[1], f[4])
		}
		if _, ok := f[3]; ok {
			t.Fatal("flight 3, absent from the snapshot, was not diff-deleted")
		}
		after, ok := f[2]
		if !ok || after.StateVersion != before.StateVersion || after.Scalars["FLNO"] != "CA2" {
			t.Fatalf("the refused record's flight was touched: before %+v, after %+v (present %v)", before, after, ok)
		}
		// The roster is 1, 2 and 4: the refused record's flight stays in it.
		if d := h.ledgerDay("2026-09-09"); d.Roster != 3 {
			t.Fatalf("the day's roster holds %d flights, want 3 (1, 2, 4): the refused record's flight stays in it", d.Roster)
		}
	}, "mailbox: {dnldFullDay: true}")
}
