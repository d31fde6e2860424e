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
	next := cur
	d := draft{s: &next}
	var changed []string
	if cmds.Full {
		changed = d.applyFull(cmds)
	} else {
		// An increment's implied commands are all Unchanged: only the ones
		// it carries can change anything.
		for _, cmd := range cmds.Cmds {
			if cmd.Op == OpUnchanged {
				continue
			}
			if d.apply(fieldTable[FieldOrder(cmd.Tag)].Kind, cmd) {
				changed = append(changed, cmd.Tag)
			}
		}
	}
	d.ownAll()
	return next, changed, nil
}

// applyFull applies a full snapshot's commands, validated, and clears
// every mapped field they omit: Commands.All, walked instead of Expanded's
// slice built (a full-day snapshot merges ten thousand flights of some
// eighty fields each). It returns the tags whose value changed, in
// canonical order.
func (d *draft) applyFull(cmds Commands) []string {
	var changed []string
	for i, cmd := range cmds.All() {
		if cmd.Op == OpUnchanged {
			continue
		}
		if d.apply(fieldTable[i].Kind, cmd) {
			changed = append(changed, cmd.Tag)
		}
	}
	return changed
}

// draft is the next state while Apply builds it: its maps are cur's until
// a command changes one, and only a map that changes is copied (copy on
// write). A FLOP changes a few scalars: the flight's lists and anomalies
// stay shared, and a command that sets a value the field already holds,
// or clears an absent one, copies nothing.
type draft struct {
	s                                *State
	ownScalars, ownLists, ownAnomaly bool
}

// ownAll gives the state maps of its own where cur had none (nil): a nil
// map reads as empty, but the next state's maps are never nil.
func (d *draft) ownAll() {
	if d.s.Scalars == nil {
		d.s.Scalars = map[string]string{}
	}
	if d.s.Lists == nil {
		d.s.Lists = map[string][]Item{}
	}
	if d.s.Anomalies == nil {
		d.s.Anomalies = map[string]Item{}
	}
}

// apply applies one validated command and reports whether the field's
// value changed.
func (d *draft) apply(kind Kind, cmd Command) bool {
	s := d.s
	switch kind {
	case KindScalar:
		old, had := s.Scalars[cmd.Tag]
		if cmd.Op == OpClear {
			if !had {
				return false
			}
			own(&s.Scalars, &d.ownScalars)
			delete(s.Scalars, cmd.Tag)
			return true
		}
		if had && old == cmd.Value {
			return false
		}
		own(&s.Scalars, &d.ownScalars)
		s.Scalars[cmd.Tag] = cmd.Value
		return true
	case KindAnomaly:
		old, had := s.Anomalies[cmd.Tag]
		if cmd.Op == OpClear {
			if !had {
				return false
			}
			own(&s.Anomalies, &d.ownAnomaly)
			delete(s.Anomalies, cmd.Tag)
			return true
		}
		if had && maps.Equal(old, cmd.Anomaly) {
			return false
		}
		own(&s.Anomalies, &d.ownAnomaly)
		s.Anomalies[cmd.Tag] = cmd.Anomaly
		return true
	default: // KindCollection, KindRecord
		old, had := s.Lists[cmd.Tag]
		if cmd.Op == OpClear {
			if !had {
				return false
			}
			own(&s.Lists, &d.ownLists)
			delete(s.Lists, cmd.Tag)
			return len(old) > 0
		}
		if had && slices.EqualFunc(old, cmd.Items, maps.Equal) {
			return false
		}
		own(&s.Lists, &d.ownLists)
		s.Lists[cmd.Tag] = cmd.Items
		return !slices.EqualFunc(old, cmd.Items, maps.Equal)
	}
}

// own copies *m before its first write in a draft (ownMap).
func own[V any](m *map[string]V, owned *bool) {
	if !*owned {
		*m, *owned = ownMap(*m), true
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
