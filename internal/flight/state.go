package flight

import "time"

// State is one flight's full current state: the main row plus every
// collection, record and anomaly (seed 000 §3.3). Fields are exported so the
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

// withOwnMaps returns a copy of s with maps of its own whose values (item
// slices, items) are shared with s. The merge engine never changes an item
// or an item slice in place — a command replaces them whole — so the next
// state may share what it does not replace, and only the maps are copied.
func (s State) withOwnMaps() State {
	out := s
	out.Scalars = make(map[string]string, len(s.Scalars))
	for k, v := range s.Scalars {
		out.Scalars[k] = v
	}
	out.Lists = make(map[string][]Item, len(s.Lists))
	for k, v := range s.Lists {
		out.Lists[k] = v
	}
	out.Anomalies = make(map[string]Item, len(s.Anomalies))
	for k, v := range s.Anomalies {
		out.Anomalies[k] = v
	}
	return out
}

// Clone returns a deep copy that shares no map or slice with s.
func (s State) Clone() State {
	out := s
	out.Scalars = make(map[string]string, len(s.Scalars))
	for k, v := range s.Scalars {
		out.Scalars[k] = v
	}
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
