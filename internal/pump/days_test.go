package pump_test

import (
	"testing"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// A window snapshot (here a RESP nobody asked for) makes the same owner
// check as a full-day one (processing rules R10.5): a FLID whose stored day is another
// refuses the whole message, DEAD(PROTOCOL) SAME_FLID_ACROSS_OPERATION_DAYS,
// and nothing of it is written.
func TestWindowSnapshotOfAnotherDaysFlightIsDead(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		day9 := h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
		window := h.put(h.schd("RESP", fltr(5, "CA5", "10"), fltr(1, "CA1-X", "10")))
		h.drain(h.newPump())
		h.wantRow(day9, pumpdata.StatusSucceeded, "")
		h.wantRow(window, pumpdata.StatusDead, snapshot.ReasonDayMismatch)
		f := h.flights()
		if _, ok := f[5]; ok || f[1].Scalars["FLNO"] != "CA1" || f[1].OperationDay != "2026-09-09" {
			t.Fatalf("the refused window changed state: %+v", f)
		}
		if n, _ := h.events(window); n != 0 {
			t.Fatalf("the refused window queued %d events", n)
		}
	}, "mailbox: {dnldFullDay: true}")
}

// A flight leaves its day's roster however it leaves current state: an
// FDEL, or the history sweep.
func TestFlightsLeavingCurrentStateLeaveTheRoster(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		h.put(h.schd("DNLD", fltr(1, "CA1", "05"), fltr(2, "CA2", "05"), fltr(3, "CA3", "05")))
		del := h.put(h.flop("FDEL", 2, ""))
		h.drain(h.newPump())
		h.wantRow(del, pumpdata.StatusSucceeded, "")
		if d := h.ledgerDay("2026-09-05"); d != (ledgerDay{1, 2}) {
			t.Fatalf("ledger of 9/5 after an FDEL: %+v, want version 1 and 2 flights", d)
		}
		// The next pump's lifecycle jobs (run at its start) move the day's
		// flights to history: 9/5 ended more than 48 h ago.
		h.drain(h.newPump())
		if f := h.flights(); len(f) != 0 {
			t.Fatalf("flights left current: %v", keys(f))
		}
		if d := h.ledgerDay("2026-09-05"); d != (ledgerDay{1, 0}) {
			t.Fatalf("ledger of 9/5 after the history sweep: %+v, want version 1 and no flights", d)
		}
	}, "mailbox: {dnldFullDay: true}", "history: {scheduledAge: 48h}")
}

// An FLOP applied after a snapshot changed its flight starts from what the
// snapshot wrote, though the pump's state cache still holds the flight as
// its earlier FLOP left it: the cache is checked by version.
func TestFLOPAfterASnapshotStartsFromTheSnapshot(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		p := h.newPump()
		h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"))
		h.drain(p)
		h.put(h.schd("DNLD", fltr(1, "CA1-NEW", "09", "<ESTT>09SEP260930</ESTT>")))
		h.drain(p)
		last := h.put(h.flop("STND", 1, "<STND>101</STND>"))
		h.drain(p)
		h.wantRow(last, pumpdata.StatusSucceeded, "")
		f := h.flights()[1]
		if f.OperationDay != "2026-09-09" || f.Scalars["FLNO"] != "CA1-NEW" || f.Scalars["STND"] != "101" {
			t.Fatalf("flight 1 after snapshot and FLOP: day %q, scalars %v", f.OperationDay, f.Scalars)
		}
	}, "mailbox: {dnldFullDay: true}")
}

// Ledger retention (processing rules R8.3) deletes a day past retention.ledgerDays
// once nothing holds it, and keeps one whose flight is still current.
func TestLedgerRetentionKeepsADayWithCurrentFlights(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		h.put(h.schd("DNLD", fltr(1, "CA1", "05")))
		h.put(h.schd("DNLD", fltr(2, "CA2", "06")))
		h.drain(h.newPump())
		if h.ledgerDays() != 2 {
			t.Fatalf("%d ledger days, want 9/5 and 9/6", h.ledgerDays())
		}
		// The next pump's lifecycle jobs (run at its start): 9/5 ended
		// more than 72 h ago, so its flight moves to history and nothing
		// holds the day; 9/6's flight is still current.
		h.drain(h.newPump())
		if _, current := h.flights()[2]; !current || len(h.flights()) != 1 {
			t.Fatalf("current flights %v, want 9/6's alone", keys(h.flights()))
		}
		if d5, d6 := h.ledgerDay("2026-09-05"), h.ledgerDay("2026-09-06"); d5 != (ledgerDay{}) || d6 != (ledgerDay{1, 1}) {
			t.Fatalf("ledger after retention: 9/5 %+v (want gone), 9/6 %+v (want kept with its flight)", d5, d6)
		}
	}, "mailbox: {dnldFullDay: true}", "history: {scheduledAge: 72h}", "retention: {ledgerDays: 2}")
}
