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
	out := make([]FieldChange, 0, len(pos))
	for _, i := range pos {
		if c, ok := diffField(&fieldTable[i], &before, &after); ok {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// diffField compares one field of two states: the change, or false when
// the document shows the same value (or none) both ways. Both values are
// rendered into one buffer, sized for them.
func diffField(f *FieldSpec, before, after *State) (FieldChange, bool) {
	var buf []byte
	var mid int
	switch f.Kind {
	case KindScalar:
		a, b := before.Scalars[f.Tag], after.Scalars[f.Tag]
		if a == b {
			return FieldChange{}, false
		}
		buf = make([]byte, 0, len(a)+len(b)+8)
		buf = appendScalarJSON(buf, a)
		mid = len(buf)
		buf = appendScalarJSON(buf, b)
	case KindAnomaly:
		a, b := before.Anomalies[f.Tag], after.Anomalies[f.Tag]
		if maps.Equal(a, b) {
			return FieldChange{}, false
		}
		buf = make([]byte, 0, 32*(len(a)+len(b))+8)
		buf = appendObjectJSON(buf, a)
		mid = len(buf)
		buf = appendObjectJSON(buf, b)
	default:
		a, b := nonEmptyItems(before.Lists[f.Tag]), nonEmptyItems(after.Lists[f.Tag])
		if slices.EqualFunc(a, b, maps.Equal) {
			return FieldChange{}, false
		}
		buf = make([]byte, 0, 64*(len(a)+len(b))+8)
		buf = appendListJSON(buf, a)
		mid = len(buf)
		buf = appendListJSON(buf, b)
	}
	// An empty value renders nothing: absent (nil).
	var old, cur json.RawMessage
	if mid > 0 {
		old = buf[:mid:mid]
	}
	if len(buf) > mid {
		cur = buf[mid:]
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

// appendScalarJSON appends a scalar's value as the document shows it,
// nothing when it is empty (absent).
func appendScalarJSON(buf []byte, s string) []byte {
	if s == "" {
		return buf
	}
	return AppendJSONString(buf, s)
}

// appendObjectJSON appends an anomaly's object, nothing when it is empty.
func appendObjectJSON(buf []byte, it Item) []byte {
	if len(it) == 0 {
		return buf
	}
	return appendObject(buf, it)
}

// appendListJSON appends a list's array of objects, nothing when it is
// empty.
func appendListJSON(buf []byte, items []Item) []byte {
	if len(items) == 0 {
		return buf
	}
	buf = append(buf, '[')
	for i, it := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendObject(buf, it)
	}
	return append(buf, ']')
}
