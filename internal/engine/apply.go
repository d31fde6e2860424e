package engine

import (
	"fmt"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Plausibility bounds the history times (CNCL, NAAT, NEAT) that drive the
// history rules: one farther than Window from its flight's day, read in
// Location (the airport's time zone), is kept as sent but flagged, and the
// history sweep ignores it.
type Plausibility struct {
	Location *time.Location
	Window   time.Duration
}

// Change is what an increment or a deletion message carries, as the
// engine applies it: a FLOP's or an ADFT's records (Increments), or an
// FDEL's FLIDs (Deletions); never both.
type Change struct {
	Increments []flight.Commands
	Deletions  []flight.FLID
}

// MessageEffect is what an increment or a deletion message did to a
// working set.
type MessageEffect struct {
	// Versions maps each flight the message changed or deleted to its new
	// state_version; empty when it queued no outbox event.
	Versions map[flight.FLID]int64
	// ImplausibleFLID is the first flight whose history times the message
	// set implausibly far from its day, ImplausibleTags those times
	// (ImplausibleTimes); ImplausibleTags is nil when there are none.
	ImplausibleFLID flight.FLID
	ImplausibleTags []string
}

// Apply applies one message's change to the set: its deletions (Delete)
// or its increments (Increment), and reports what it did, with the history
// times the increments set implausibly far from their flight's day (by
// plausible). A change with both is refused. On error nothing of the
// message is kept.
func (w *WorkingSet) Apply(meta Meta, c Change, plausible Plausibility) (MessageEffect, error) {
	switch {
	case len(c.Deletions) > 0 && len(c.Increments) > 0:
		return MessageEffect{}, fmt.Errorf("message %d: both increments and deletions", meta.MessageID)
	case len(c.Deletions) > 0:
		out, err := w.Delete(meta, c.Deletions)
		if err != nil {
			return MessageEffect{}, err
		}
		return MessageEffect{Versions: out.Versions}, nil
	default:
		out, err := w.Increment(meta, c.Increments)
		if err != nil {
			return MessageEffect{}, err
		}
		eff := MessageEffect{Versions: out.Versions}
		eff.ImplausibleFLID, eff.ImplausibleTags = ImplausibleTimes(c.Increments, out.States, plausible.Location, plausible.Window)
		return eff, nil
	}
}
