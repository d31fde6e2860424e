package pump_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
)

// historyRow is one change of a flight's history, its changes as
// "FIELD op old → new" lines.
type historyRow struct {
	Msg           int64
	Kind          string
	From, Version int64
	Changes       []string
}

// flightHistory is flid's history on either backend: the real store's read
// (store.FlightHistory), or the memory store's outbox rows, which carry
// each one's history row.
func (h *harness) flightHistory(flid flight.FLID) []historyRow {
	h.t.Helper()
	var changes []store.FlightChange
	if h.mem != nil {
		h.mem.View(func(d pumptest.Data) {
			var prev int64
			for _, e := range d.Outbox {
				if e.FLID != flid {
					continue
				}
				c := store.FlightChange{MessageID: e.MessageID, Kind: e.ChangeKind, FromVersion: prev, Version: e.Version}
				if err := json.Unmarshal([]byte(e.Changes), &c.Changes); err != nil {
					h.t.Fatalf("changes of version %d: %v", e.Version, err)
				}
				changes, prev = append(changes, c), e.Version
			}
		})
	} else {
		var err error
		if changes, err = h.store.FlightHistory(context.Background(), flid, store.HistoryFilter{}); err != nil {
			h.t.Fatal(err)
		}
	}
	out := make([]historyRow, 0, len(changes))
	for _, c := range changes {
		r := historyRow{Msg: c.MessageID, Kind: c.Kind, From: c.FromVersion, Version: c.Version, Changes: []string{}}
		for _, f := range c.Changes {
			r.Changes = append(r.Changes, f.Tag+" "+f.Op+" "+orNone(string(f.Old))+" → "+orNone(string(f.New)))
		}
		out = append(out, r)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// A flight's history lists every message that gave it a new state, in
// order, with what each changed: the snapshot that created it (every field
// Set), a FLOP that set its gate, one that cleared its estimate, the FDEL
// that deleted it and the snapshot that re-created it; each change's
// versions chain (before → after).
func TestFlightHistory(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		const flid = 12345678
		resp := h.schd("RESP", fltr(flid, "CA1", "09", "<ESTT>09SEP260900</ESTT>"), fltr(2, "CA2", "09"))
		created := h.put(resp)
		gate := h.put(h.flop("GTDT", flid, `<GTDT GTNO="1"><GATE>B7</GATE></GTDT>`))
		cleared := h.put(h.flop("ESTT", flid, `<ESTT></ESTT>`))
		untouched := h.put(h.flop("ESTT", 2, `<ESTT>09SEP261000</ESTT>`))
		deleted := h.put(h.flop("FDEL", flid, ""))
		resent := h.put(h.schd("RESP", fltr(flid, "CA1", "09", "<ESTT>09SEP260900</ESTT>"), fltr(2, "CA2", "09", "<ESTT>09SEP261000</ESTT>")))
		h.drain(h.newPump())
		for _, id := range []int64{created, gate, cleared, untouched, deleted, resent} {
			h.wantRow(id, pumpdata.StatusSucceeded, "")
		}
		got := h.flightHistory(flid)
		if len(got) != 5 {
			t.Fatalf("history of %d: %d changes %+v, want 5", flid, len(got), got)
		}
		v := func(i int) int64 { return got[i].Version }
		want := []historyRow{
			{created, "UPSERT", 0, v(0), []string{`FLNO Set - → "CA1"`, `SODT Set - → "09SEP260800"`, `ESTT Set - → "09SEP260900"`}},
			{gate, "UPSERT", v(0), v(1), []string{`GTDT Set - → [{"GATE":"B7","GTNO":"1"}]`}},
			{cleared, "UPSERT", v(1), v(2), []string{`ESTT Clear "09SEP260900" → -`}},
			{deleted, "DELETE", v(2), v(3), []string{}},
			{resent, "UPSERT", v(3), v(4), []string{`FLNO Set - → "CA1"`, `SODT Set - → "09SEP260800"`, `ESTT Set - → "09SEP260900"`}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("history of %d (-want +got):\n%s", flid, diff)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Version <= got[i-1].Version {
				t.Fatalf("versions not ascending: %+v", got)
			}
		}
		if h.mem == nil {
			if _, err := h.store.FlightHistory(context.Background(), 999, store.HistoryFilter{}); !isNoFlight(err) {
				t.Fatalf("history of an unknown flight: %v, want ErrNoFlight", err)
			}
			page, err := h.store.FlightHistory(context.Background(), flid, store.HistoryFilter{After: v(1), Limit: 2})
			if err != nil || len(page) != 2 || page[0].Version != v(2) || page[0].FromVersion != v(1) || page[0].Styp != "ESTT" ||
				page[0].Type != "FLOP" || page[0].Result != pumpdata.StatusSucceeded || page[0].ReceivedAt.IsZero() {
				t.Fatalf("page after version %d: %+v, %v", v(1), page, err)
			}
		}
	})
}

// The history goes with the raw messages' retention (archiveBefore).
func TestFlightHistoryPruned(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.put(h.flop("ESTT", 7, "<ESTT>09SEP260930</ESTT>"))
	h.drain(h.newPump())
	if n := h.count(`SELECT count(*) FROM flight_change WHERE flid = 7`); n != 1 {
		t.Fatalf("%d history rows, want 1", n)
	}
	future := h.clock.Now().Add(24 * time.Hour)
	if _, err := h.store.Prune(context.Background(), future.Add(-48*time.Hour), future, future.Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := h.count(`SELECT count(*) FROM flight_change WHERE flid = 7`); n != 0 {
		t.Fatalf("%d history rows after the archive's retention, want 0", n)
	}
}

func isNoFlight(err error) bool { return errors.Is(err, store.ErrNoFlight) }
