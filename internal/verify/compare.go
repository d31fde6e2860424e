package verify

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Ledger is one day's snapshot ledger (schd_gen and its roster).
type Ledger struct {
	// Present: the day has a committed full-day snapshot.
	Present bool `json:"present"`
	// Version is a value of the state_version sequence: shown, never
	// compared (a rebuild takes other values of its own sequence).
	Version       int64         `json:"version,omitempty"`
	LastMessageID int64         `json:"lastMessageId,omitempty"`
	Roster        []flight.FLID `json:"roster,omitempty"`
}

// Result is one message's processing result.
type Result struct {
	ID     int64  `json:"id"`
	Status string `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Flight differences (FlightDiff.Kind).
const (
	// OnlyServed: the day serves the flight, the rebuild has none.
	OnlyServed = "only served"
	// OnlyRebuilt: the rebuild has the flight, the day does not serve it.
	OnlyRebuilt = "only rebuilt"
	// Differs: both have it, with other values.
	Differs = "differs"
)

// LastMessageField names the message that last changed a flight in a
// FlightDiff's changes (beside the SIS fields).
const LastMessageField = "lastMessageId"

// FlightDiff is one flight whose rebuilt state is not the served one;
// Changes read from the rebuilt state (Old) to the served one (New).
type FlightDiff struct {
	FLID    flight.FLID          `json:"flid"`
	Kind    string               `json:"kind"`
	Changes []flight.FieldChange `json:"changes,omitempty"`
}

// LedgerDiff is the day's ledger, served and rebuilt, when they differ.
type LedgerDiff struct {
	Served  Ledger `json:"served"`
	Rebuilt Ledger `json:"rebuilt"`
	// What says which part differs.
	What string `json:"what"`
}

// Parting is the first message, in mailbox order, whose rebuilt result is
// not the served one.
type Parting struct {
	Served  Result `json:"served"`
	Rebuilt Result `json:"rebuilt"`
}

// Report is the comparison of a rebuilt day with the served one.
type Report struct {
	Day string `json:"day"`
	// Flights counts the flights of the day served.
	Flights int          `json:"flights"`
	Diffs   []FlightDiff `json:"diffs,omitempty"`
	Ledger  *LedgerDiff  `json:"ledger,omitempty"`
	Parting *Parting     `json:"parting,omitempty"`
	// Messages counts the messages replayed.
	Messages int `json:"messages"`
}

// Identical reports whether the rebuilt day is the served one.
func (r Report) Identical() bool {
	return len(r.Diffs) == 0 && r.Ledger == nil && r.Parting == nil
}

// Compare compares the served day with the rebuilt one: the flights of the
// day (by FLID, masked for their version and update time), the ledger,
// and the messages' results in order (the first that differs).
func Compare(day string, served, rebuilt []flight.State, servedLedger, rebuiltLedger Ledger,
	order []Archived, servedResults, rebuiltResults map[int64]Result) Report {
	rep := Report{Day: day, Flights: len(served), Messages: len(order)}
	byFLID := make(map[flight.FLID]flight.State, len(rebuilt))
	for _, s := range rebuilt {
		byFLID[s.FLID] = s
	}
	seen := make(map[flight.FLID]bool, len(served))
	for _, s := range served {
		seen[s.FLID] = true
		r, ok := byFLID[s.FLID]
		if !ok {
			rep.Diffs = append(rep.Diffs, FlightDiff{FLID: s.FLID, Kind: OnlyServed, Changes: stateChanges(flight.NewState(s.FLID), s, false)})
			continue
		}
		if ch := stateChanges(r, s, true); len(ch) > 0 {
			rep.Diffs = append(rep.Diffs, FlightDiff{FLID: s.FLID, Kind: Differs, Changes: ch})
		}
	}
	for _, r := range rebuilt {
		if !seen[r.FLID] {
			rep.Diffs = append(rep.Diffs, FlightDiff{FLID: r.FLID, Kind: OnlyRebuilt, Changes: stateChanges(r, flight.NewState(r.FLID), false)})
		}
	}
	slices.SortFunc(rep.Diffs, func(a, b FlightDiff) int { return cmp.Compare(a.FLID, b.FLID) })
	if what := ledgerDiffers(servedLedger, rebuiltLedger); what != "" {
		rep.Ledger = &LedgerDiff{Served: servedLedger, Rebuilt: rebuiltLedger, What: what}
	}
	for _, a := range order {
		s, r := servedResults[a.ID], rebuiltResults[a.ID]
		s.ID, r.ID = a.ID, a.ID
		if s.Status != r.Status || s.Reason != r.Reason {
			rep.Parting = &Parting{Served: s, Rebuilt: r}
			break
		}
	}
	return rep
}

// stateChanges lists what differs from rebuilt to served, the message
// that last changed the flight included when withLast.
func stateChanges(rebuilt, served flight.State, withLast bool) []flight.FieldChange {
	out := flight.Diff(rebuilt, served)
	if withLast && rebuilt.LastMessageID != served.LastMessageID {
		out = append(out, flight.FieldChange{Tag: LastMessageField, Op: flight.ChangeReplace,
			Old: json.RawMessage(strconv.FormatInt(rebuilt.LastMessageID, 10)), New: json.RawMessage(strconv.FormatInt(served.LastMessageID, 10))})
	}
	return out
}

func ledgerDiffers(served, rebuilt Ledger) string {
	switch {
	case served.Present != rebuilt.Present:
		return "full-day snapshot committed"
	case served.LastMessageID != rebuilt.LastMessageID:
		return "message of the latest full-day snapshot"
	}
	a, b := slices.Clone(served.Roster), slices.Clone(rebuilt.Roster)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		return "roster"
	}
	return ""
}

// The outcomes of a verification (Record.Outcome).
const (
	OutcomeIdentical     = "IDENTICAL"
	OutcomeDiffers       = "DIFFERS"
	OutcomeNotVerifiable = "NOT_VERIFIABLE"
)

// Record is what a verification of a day found, kept as the day's last
// verification.
type Record struct {
	Day     string `json:"day"`
	Outcome string `json:"outcome"`
	// Flights counts the flights of the day served; Differing those that
	// differ from the rebuild; Messages the messages replayed.
	Flights   int `json:"flights"`
	Differing int `json:"differing"`
	Messages  int `json:"messages"`
	// Reason says why a day is NOT_VERIFIABLE, or what else than flights
	// differs ("ledger: roster", "message 42 parts").
	Reason     string    `json:"reason,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	// RanBy says who ran it: "cli", or the read API's user.
	RanBy string `json:"ranBy,omitempty"`
}

// RecordOf is the record of a verification that compared the day (rep) or
// found it not verifiable (nv non-nil).
func RecordOf(day string, rep Report, nv *NotVerifiable) Record {
	if nv != nil {
		return Record{Day: day, Outcome: OutcomeNotVerifiable, Reason: nv.Reason}
	}
	r := Record{Day: day, Outcome: OutcomeIdentical, Flights: rep.Flights, Differing: len(rep.Diffs), Messages: rep.Messages}
	if rep.Identical() {
		return r
	}
	r.Outcome = OutcomeDiffers
	var why []string
	if rep.Ledger != nil {
		why = append(why, "ledger: "+rep.Ledger.What)
	}
	if rep.Parting != nil {
		why = append(why, "message "+strconv.FormatInt(rep.Parting.Served.ID, 10)+" parts")
	}
	r.Reason = strings.Join(why, "; ")
	return r
}
