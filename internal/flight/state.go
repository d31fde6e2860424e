package flight

import (
	"maps"
	"time"
)

// State is one flight's full current state: the main row plus every
// collection, record and anomaly (processing rules R3.3). Fields are exported so the
// store can fill them; a nil map reads as empty.
type State struct {
	FLID FLID
	// OperationDay is "YYYY-MM-DD", or "" while the day is not yet known
	// (NULL until a full-day snapshot includes the flight).
	OperationDay  string
	StateVersion  int64
	UpdatedAt     time.Time
	LastMessageID int64
	// Scalars holds every present scalar under its tag, original string.
	Scalars map[string]string
	// Lists holds collections and records by tag, items in input order.
	Lists map[string][]Item
	// Anomalies holds FDIV/FRET/FLAB objects by tag.
	Anomalies map[string]Item
}

// NewState returns an empty state for flid with its maps allocated.
func NewState(flid FLID) State {
	return State{
		FLID:      flid,
		Scalars:   map[string]string{},
		Lists:     map[string][]Item{},
		Anomalies: map[string]Item{},
	}
}

// A state's maps are never written once Apply returns it: the next state
// shares with cur the maps a message leaves alone and their values (item
// slices, items), since a command replaces a value whole and Apply copies a
// map before it writes to it (draft).

// ownMap copies m whole — maps.Clone copies the table instead of hashing
// every key again (a third less time for a flight's 30 scalars; a flight
// is copied for every message that changes it) — and never returns nil,
// so the copy can be written to.
func ownMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return maps.Clone(m)
}

// Clone returns a deep copy that shares no map or slice with s.
func (s State) Clone() State {
	out := s
	out.Scalars = ownMap(s.Scalars)
	out.Lists = make(map[string][]Item, len(s.Lists))
	for k, v := range s.Lists {
		out.Lists[k] = CloneItems(v)
	}
	out.Anomalies = make(map[string]Item, len(s.Anomalies))
	for k, v := range s.Anomalies {
		out.Anomalies[k] = v.Clone()
	}
	return out
}
