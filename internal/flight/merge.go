package flight

import (
	"fmt"
	"maps"
	"slices"
)

// Apply is the merge engine (processing rules R5.4): it copies cur, applies every
// command of cmds to the copy and returns the next state with the tags whose
// value changed, in canonical field order. A full snapshot (cmds.Full)
// clears every mapped field it does not carry; an increment leaves them.
// Anomaly Set replaces the whole object, so no attribute of an older object
// survives. Identity and bookkeeping (FLID, OperationDay, StateVersion,
// UpdatedAt, LastMessageID) are the caller's: Apply copies them unchanged.
//
// Same input, same output; cur is never modified. An empty changed list
// means the message changes nothing and must not bump the version.
func Apply(cur State, cmds Commands) (State, []string, error) {
	if err := cmds.Validate(); err != nil {
		return State{}, nil, err
	}
	if cmds.FLID != cur.FLID {
		return State{}, nil, fmt.Errorf("%w: commands for FLID %s applied to FLID %s", ErrInvalidCommand, cmds.FLID, cur.FLID)
	}
	// Commands replace items whole, so the items the message leaves alone
	// are shared with cur, and the items it carries are shared with the
	// commands: items are never changed in place once built (a decoded
	// message's are not touched after decoding), so sharing is safe and a
	// full-day snapshot does not hold every item twice.
	next := cur.withOwnMaps()
	var changed []string
	// An increment's implied commands are all Unchanged: only the ones it
	// carries can change anything. A full snapshot clears what it omits.
	todo := cmds.Cmds
	if cmds.Full {
		todo = cmds.Expanded()
	}
	for _, cmd := range todo {
		if cmd.Op == OpUnchanged {
			continue
		}
		if applyOne(&next, fieldTable[FieldOrder(cmd.Tag)].Kind, cmd) {
			changed = append(changed, cmd.Tag)
		}
	}
	return next, changed, nil
}

// applyOne applies one validated command and reports whether the field's
// value changed.
func applyOne(s *State, kind Kind, cmd Command) bool {
	switch kind {
	case KindScalar:
		old, had := s.Scalars[cmd.Tag]
		if cmd.Op == OpClear {
			delete(s.Scalars, cmd.Tag)
			return had
		}
		s.Scalars[cmd.Tag] = cmd.Value
		return !had || old != cmd.Value
	case KindAnomaly:
		old, had := s.Anomalies[cmd.Tag]
		if cmd.Op == OpClear {
			delete(s.Anomalies, cmd.Tag)
			return had
		}
		s.Anomalies[cmd.Tag] = cmd.Anomaly
		return !had || !maps.Equal(old, cmd.Anomaly)
	default: // KindCollection, KindRecord
		old, had := s.Lists[cmd.Tag]
		if cmd.Op == OpClear {
			delete(s.Lists, cmd.Tag)
			return had && len(old) > 0
		}
		s.Lists[cmd.Tag] = cmd.Items
		return !slices.EqualFunc(old, cmd.Items, maps.Equal)
	}
}

// PresentKeys lists the tags of the fields s holds, in canonical field
// order: a new flight's every field counts as changed.
func PresentKeys(s State) []string { return ChangedKeys(NewState(s.FLID), s) }

// ChangedKeys lists the tags whose values differ between two states of one
// flight, in canonical field order; used where a state is replaced rather
// than merged (deletes, history).
func ChangedKeys(a, b State) []string {
	var out []string
	for _, f := range fieldTable {
		var same bool
		switch f.Kind {
		case KindScalar:
			av, aok := a.Scalars[f.Tag]
			bv, bok := b.Scalars[f.Tag]
			same = aok == bok && av == bv
		case KindAnomaly:
			av, aok := a.Anomalies[f.Tag]
			bv, bok := b.Anomalies[f.Tag]
			same = aok == bok && maps.Equal(av, bv)
		default:
			same = slices.EqualFunc(a.Lists[f.Tag], b.Lists[f.Tag], maps.Equal)
		}
		if !same {
			out = append(out, f.Tag)
		}
	}
	return out
}
