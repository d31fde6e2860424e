package pump_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// outboxRow is one msg_event row of a message: its flight and version,
// and which records it carries.
type outboxRow struct {
	FLID, Version       int64
	HasState, HasNotice bool
}

func (h *harness) outboxRows(msgID int64) []outboxRow {
	h.t.Helper()
	if h.mem != nil {
		var out []outboxRow
		h.mem.View(func(d pumptest.Data) {
			for _, e := range d.Outbox {
				if e.MessageID == msgID {
					out = append(out, outboxRow{FLID: int64(e.FLID), Version: e.Version, HasState: e.State != "", HasNotice: e.Notice != ""})
				}
			}
		})
		return out
	}
	rows, err := h.db.Query(h.t.Context(), `SELECT flid, state_version, state IS NOT NULL, notice IS NOT NULL
		FROM msg_event WHERE message_id = $1 ORDER BY id`, msgID)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		if err := rows.Scan(&r.FLID, &r.Version, &r.HasState, &r.HasNotice); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// One outbox row per message effect: a FLOP writes one row with
// its notice and its flight's state; three FLOPs of one flight in one batch
// write three rows and only the newest carries the state (the dispatcher
// sends a flight's newest state only, and the three commit together); a
// snapshot of N flights writes N rows, each with its state.
func TestOutboxOneRowPerMessageEffect(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		first := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
		second := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260940</ESTT>"))
		other := h.put(h.flop("ESTT", 10, "<ESTT>09SEP260900</ESTT>"))
		third := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260950</ESTT>"))
		h.drain(h.newPump())
		for _, id := range []int64{first, second, other, third} {
			h.wantRow(id, pumpdata.StatusSucceeded, "")
		}
		v9, v10 := h.flights()[9].StateVersion, h.flights()[10].StateVersion
		got := map[string][]outboxRow{
			"first": h.outboxRows(first), "second": h.outboxRows(second), "other": h.outboxRows(other), "third": h.outboxRows(third),
		}
		want := map[string][]outboxRow{
			"first":  {{FLID: 9, Version: got["first"][0].Version, HasNotice: true}},
			"second": {{FLID: 9, Version: got["second"][0].Version, HasNotice: true}},
			"other":  {{FLID: 10, Version: v10, HasState: true, HasNotice: true}},
			"third":  {{FLID: 9, Version: v9, HasState: true, HasNotice: true}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("outbox rows per message (-want +got):\n%s", diff)
		}
		if n := h.transactionsWithEvents(); n != 1 {
			t.Fatalf("the FLOPs were committed in %d transactions; the test needs one batch", n)
		}

		var recs []string
		for i := range 7 {
			recs = append(recs, fltr(200+i, fmt.Sprintf("CA%d", 200+i), "09"))
		}
		snap := h.put(h.schd("DNLD", recs...))
		h.drain(h.newPump())
		rows := h.outboxRows(snap)
		if len(rows) != 7 {
			t.Fatalf("snapshot of 7 flights: %d rows %+v, want 7", len(rows), rows)
		}
		for _, r := range rows {
			if !r.HasState || !r.HasNotice {
				t.Fatalf("snapshot row %+v: want its state and notice", r)
			}
		}
	})
}

// transactionsWithEvents is the number of transactions that wrote outbox
// rows (PostgreSQL: their distinct created_at, the transaction's time;
// memory: the commits, every one of which here writes events).
func (h *harness) transactionsWithEvents() int {
	h.t.Helper()
	if h.mem != nil {
		return len(h.mem.Commits())
	}
	return h.count(`SELECT count(DISTINCT created_at) FROM msg_event`)
}
