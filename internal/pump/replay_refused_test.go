package pump_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// replay --policy skip-conflicts skips the records the decoder refuses the
// way it skips day mismatches (issue 39 item 4): a full-day snapshot DEAD
// for one record's bad CNCL is applied without that record; the note and
// the trace row name it by its FLID, position and refusal; its flight is
// left untouched — not rewritten, not diff-deleted, still in the day's
// roster — while the rest of the snapshot applies (a new flight, an
// update, a diff-delete).
func TestSkipConflictsReplaySkipsRefusedRecords(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "mailbox: {dnldFullDay: true}")
	h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09"), fltr(3, "CA3", "09")))
	bad := h.put(h.schd("DNLD", fltr(1, "CA1X", "09"), fltr(2, "CA2X", "09", "<CNCL>31FEB261000</CNCL>"), fltr(4, "CA4", "09")))
	p := h.newPump()
	h.drain(p)
	h.wantRow(bad, pumpdata.StatusDead, "BAD_TIME at MSG/SCHD/FLTR[2]/CNCL (FLID 2)")
	before := h.flights()[2]

	req, err := h.store.RequestReplay(t.Context(), bad, pumpdata.ReplaySkipConflicts)
	if err != nil {
		t.Fatalf("record the skip-conflicts replay of a snapshot DEAD for a refused record: %v", err)
	}
	h.runUntil(p, "the replay done", func() (bool, string) {
		r, err := h.store.Replay(t.Context(), req.ID)
		return err == nil && r.State != pumpdata.ReplayPending, fmt.Sprint(r, err)
	})
	r, err := h.store.Replay(t.Context(), req.ID)
	if err != nil {
		t.Fatal(err)
	}
	const named = "FLID 2 (FLTR[2]): BAD_TIME at MSG/SCHD/FLTR[2]/CNCL (FLID 2)"
	if r.State != pumpdata.ReplayDone || r.Result != pumpdata.StatusSucceeded || !strings.Contains(r.Note, "1 refused record(s) left out") ||
		!strings.Contains(r.Note, named) {
		t.Fatalf("replay %+v: want DONE, SUCCEEDED, its note naming %q", r, named)
	}
	var detail string
	if err := h.db.QueryRow(t.Context(), `SELECT detail FROM schd_snap_log WHERE msg_id = $1 AND result = 'COMMITTED'`, bad).Scan(&detail); err != nil {
		t.Fatalf("the replay's trace row: %v", err)
	}
	if !strings.Contains(detail, named) {
		t.Fatalf("trace detail %q does not name %q", detail, named)
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
	var roster []int64
	rows, err := h.db.Query(t.Context(), `SELECT flid FROM schd_gen_flid WHERE operation_day = '2026-09-09' ORDER BY flid`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		roster = append(roster, id)
	}
	rows.Close()
	if fmt.Sprint(roster) != "[1 2 4]" {
		t.Fatalf("roster %v, want [1 2 4]: the refused record's flight stays in it", roster)
	}
}
