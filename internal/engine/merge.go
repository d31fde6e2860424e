package engine

import (
	"fmt"
	"slices"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Write is one flight's next full state and what changed in it: what the
// store writes for a changed flight.
type Write struct {
	Next flight.State
	// Changed lists the field tags whose value changed; for a new flight
	// every present field counts as changed.
	Changed []string
	// IsNew: the database does not hold the flight (an insert).
	IsNew bool
	// Diff is what changed, field by field, with old and new values
	// (flight.Diff of the state before and Next; a new flight's every
	// field is Set): the flight's history records it.
	Diff []flight.FieldChange
}

// Touches reports whether the write changes tag (a new flight's every
// field does).
func (w Write) Touches(tag string) bool {
	return w.IsNew || slices.Contains(w.Changed, tag)
}

// Merge applies cmds to the flight's current state (or a new one when it
// does not exist) and returns the write, or false when nothing changed on
// an existing flight.
func Merge(cur flight.State, exists bool, cmds flight.Commands) (Write, bool, error) {
	if !exists {
		cur = flight.NewState(cmds.FLID)
	}
	next, changed, err := flight.Apply(cur, cmds)
	if err != nil {
		return Write{}, false, fmt.Errorf("merge flight %s: %w", cmds.FLID, err)
	}
	if exists && len(changed) == 0 {
		return Write{}, false, nil
	}
	// A new flight's changed tags are every field it holds
	// (flight.PresentKeys): from an empty state, Apply reports each field
	// a command gave a value, in canonical order, and no other.
	// Every field whose value differs is in changed (a new flight's every
	// present field): the diff need not look at the others.
	return Write{Next: next, Changed: changed, IsNew: !exists, Diff: flight.DiffFields(cur, next, changed)}, true, nil
}

// MergeSnapshot merges snapshot records (full-snapshot commands, one per
// FLID) into current, the stored states of those that exist, and returns
// the writes of the changed flights in record order and the number of
// records that changed nothing. A full-day snapshot of day sets the day
// of every flight that has none (processing rules R5.3: set once, never changed).
// The merges are independent: many are spread over the cores.
func MergeSnapshot(records []flight.Commands, current map[flight.FLID]flight.State, fullDay bool, day string) (writes []Write, unchanged int, err error) {
	for _, r := range records {
		if !r.Full {
			return nil, 0, fmt.Errorf("flight %s: snapshot records carry full-snapshot commands", r.FLID)
		}
	}
	type merged struct {
		w       Write
		changed bool
		err     error
	}
	merges := make([]merged, len(records))
	inParallel(len(records), func(i int) {
		r := records[i]
		cur, exists := current[r.FLID]
		merges[i].w, merges[i].changed, merges[i].err = Merge(cur, exists, r)
	})
	for i, r := range records {
		cur, exists := current[r.FLID]
		w, changed, err := merges[i].w, merges[i].changed, merges[i].err
		if err != nil {
			return nil, 0, err
		}
		if fullDay && (!exists || cur.OperationDay == "") {
			if !changed {
				w = Write{Next: cur.Clone()}
			}
			w.Next.OperationDay = day
			w.Changed = append(w.Changed, flight.KeyOperationDay)
			w.Diff = append(w.Diff, flight.FieldChange{Tag: flight.KeyOperationDay, Op: flight.ChangeSet,
				New: flight.AppendJSONString(nil, day)})
			w.IsNew = !exists
			changed = true
		}
		if !changed {
			unchanged++
			continue
		}
		writes = append(writes, w)
	}
	return writes, unchanged, nil
}
