package engine

import (
	"slices"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// ImplausibleTimes finds the first of an increment's records that set a
// CNCL, NAAT or NEAT which its flight's new state (states, as
// IncrementEffect.States) holds farther than window from the flight's day
// in loc, and returns that flight and those tags (nil when none). The time
// is kept as sent, but the history sweep ignores it, so a typo such as
// 01JAN000000 cannot remove a live flight.
func ImplausibleTimes(records []flight.Commands, states map[flight.FLID]*flight.State, loc *time.Location, window time.Duration) (flight.FLID, []string) {
	for _, r := range records {
		if !setsHistoryTime(r) {
			continue
		}
		s, ok := states[r.FLID]
		if !ok {
			continue
		}
		if tags := flight.ImplausibleTimes(*s, loc, window); len(tags) > 0 {
			return r.FLID, tags
		}
	}
	return 0, nil
}

func setsHistoryTime(r flight.Commands) bool {
	for _, c := range r.Cmds {
		if c.Op == flight.OpSet && slices.Contains(flight.HistoryTimeTags[:], c.Tag) {
			return true
		}
	}
	return false
}
