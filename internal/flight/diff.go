package flight

import (
	"encoding/json"
	"maps"
	"slices"
)

// The operations a FieldChange reports, read off the two values.
const (
	// ChangeSet: the field had no value and has one.
	ChangeSet = "Set"
	// ChangeClear: the field had a value and has none.
	ChangeClear = "Clear"
	// ChangeReplace: the field's value is another one.
	ChangeReplace = "Replace"
)

// FieldChange is one field whose value differs between two states of a
// flight: its tag, what happened to it, and both values as the canonical
// document shows them (a scalar's JSON string, a list's array of objects,
// an anomaly's object), nil when absent.
type FieldChange struct {
	Tag string          `json:"field"`
	Op  string          `json:"op"`
	Old json.RawMessage `json:"old,omitempty"`
	New json.RawMessage `json:"new,omitempty"`
}

// Diff lists the fields that differ between before and after (two states
// of one flight), in canonical field order, with their old and new values:
// what one message changed. A field cleared to an empty value counts as
// absent, as in the canonical document, so Diff of a state and its
// canonical round trip is empty.
func Diff(before, after State) []FieldChange {
	var out []FieldChange
	for i := range fieldTable {
		if c, ok := diffField(&fieldTable[i], &before, &after); ok {
			out = append(out, c)
		}
	}
	return out
}

// DiffFields is Diff looking only at the fields named in tags (any order;
// unmapped tags are ignored): the same result as Diff whenever every field
// whose value differs is among them, as the tags Apply reports changed are
// (a field no command changed keeps its value). A message changes a few of
// a flight's 74 fields, and Diff's two map look-ups for each of the others
// cost more than the change itself.
func DiffFields(before, after State, tags []string) []FieldChange {
	var stack [16]int
	pos := stack[:0]
	for _, tag := range tags {
		if i := FieldOrder(tag); i >= 0 {
			pos = append(pos, i)
		}
	}
	slices.Sort(pos)
	pos = slices.Compact(pos)
	var out []FieldChange
	for _, i := range pos {
		if c, ok := diffField(&fieldTable[i], &before, &after); ok {
			out = append(out, c)
		}
	}
	return out
}

// diffField compares one field of two states: the change, or false when
// the document shows the same value (or none) both ways.
func diffField(f *FieldSpec, before, after *State) (FieldChange, bool) {
	var old, cur json.RawMessage
	switch f.Kind {
	case KindScalar:
		a, b := before.Scalars[f.Tag], after.Scalars[f.Tag]
		if a == b {
			return FieldChange{}, false
		}
		old, cur = scalarJSON(a), scalarJSON(b)
	case KindAnomaly:
		a, b := before.Anomalies[f.Tag], after.Anomalies[f.Tag]
		if maps.Equal(a, b) {
			return FieldChange{}, false
		}
		old, cur = objectJSON(a), objectJSON(b)
	default:
		a, b := nonEmptyItems(before.Lists[f.Tag]), nonEmptyItems(after.Lists[f.Tag])
		if slices.EqualFunc(a, b, maps.Equal) {
			return FieldChange{}, false
		}
		old, cur = listJSON(a), listJSON(b)
	}
	if old == nil && cur == nil {
		return FieldChange{}, false // empty both ways: the document shows neither
	}
	op := ChangeReplace
	switch {
	case old == nil:
		op = ChangeSet
	case cur == nil:
		op = ChangeClear
	}
	return FieldChange{Tag: f.Tag, Op: op, Old: old, New: cur}, true
}

// AppendChanges renders a diff as the history's JSON array (flight_change
// changes), each change as its JSON tags name it:
// [{"field":"GATE","op":"Replace","old":…,"new":…}], old or new left out
// when absent; "[]" for none.
func AppendChanges(buf []byte, diff []FieldChange) []byte {
	buf = append(buf, '[')
	for i, c := range diff {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"field":`...)
		buf = AppendJSONString(buf, c.Tag)
		buf = append(buf, `,"op":`...)
		buf = AppendJSONString(buf, c.Op)
		if c.Old != nil {
			buf = append(buf, `,"old":`...)
			buf = append(buf, c.Old...)
		}
		if c.New != nil {
			buf = append(buf, `,"new":`...)
			buf = append(buf, c.New...)
		}
		buf = append(buf, '}')
	}
	return append(buf, ']')
}

func scalarJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return AppendJSONString(nil, s)
}

func objectJSON(it Item) json.RawMessage {
	if len(it) == 0 {
		return nil
	}
	return appendObject(nil, it)
}

func listJSON(items []Item) json.RawMessage {
	if len(items) == 0 {
		return nil
	}
	buf := []byte{'['}
	for i, it := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendObject(buf, it)
	}
	return append(buf, ']')
}
