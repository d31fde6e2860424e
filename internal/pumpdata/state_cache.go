package pumpdata

import (
	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// DefaultStateCacheFlights bounds a StateCache: about two busy days of a
// large airport, a few hundred MB at most.
const DefaultStateCacheFlights = 20000

// StateCache keeps the flight states a writer committed, so that the next
// batch over the same flights reads one version number per flight instead
// of ten tables. An entry is used only while the database holds the same
// state_version: the guard trigger makes a flight's version rise with every
// write of its row, and versions come from a sequence and are never reused,
// so a (FLID, version) pair names exactly one content. A stale or missing
// entry costs a reload, never a wrong state; nothing has to invalidate it.
//
// A StateCache belongs to one writer (one pump goroutine) and is not safe
// for concurrent use. Cached states are shared, never mutated: the merge
// engine works on clones.
type StateCache struct {
	states map[flight.FLID]flight.State
	limit  int
}

// NewStateCache holds up to limit flights (DefaultStateCacheFlights when
// limit ≤ 0).
func NewStateCache(limit int) *StateCache {
	if limit <= 0 {
		limit = DefaultStateCacheFlights
	}
	return &StateCache{states: map[flight.FLID]flight.State{}, limit: limit}
}

// Len is the number of cached flights.
func (c *StateCache) Len() int { return len(c.states) }

// Keep records what a working set left after its transaction committed:
// the flights it holds, and the absence of those it deleted. Call it only
// after the commit; a set whose transaction rolled back must not be kept.
func (c *StateCache) Keep(w *engine.WorkingSet) {
	if c == nil || w == nil {
		return
	}
	for f, s := range w.Stored() {
		if s != nil {
			c.states[f] = *s
		} else {
			delete(c.states, f)
		}
	}
	if over := len(c.states) - c.limit; over > 0 {
		// Evict a quarter of the limit in map order (arbitrary), so a full
		// cache does not evict on every batch.
		drop := over + c.limit/4
		for f := range c.states {
			if drop == 0 {
				break
			}
			delete(c.states, f)
			drop--
		}
	}
}

// Lookup returns the state cached for f, if any.
func (c *StateCache) Lookup(f flight.FLID) (flight.State, bool) {
	if c == nil {
		return flight.State{}, false
	}
	s, ok := c.states[f]
	return s, ok
}
