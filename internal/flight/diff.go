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
	for _, f := range fieldTable {
		var old, cur json.RawMessage
		switch f.Kind {
		case KindScalar:
			a, b := before.Scalars[f.Tag], after.Scalars[f.Tag]
			if a == b {
				continue
			}
			old, cur = scalarJSON(a), scalarJSON(b)
		case KindAnomaly:
			a, b := before.Anomalies[f.Tag], after.Anomalies[f.Tag]
			if maps.Equal(a, b) {
				continue
			}
			old, cur = objectJSON(a), objectJSON(b)
		default:
			a, b := nonEmptyItems(before.Lists[f.Tag]), nonEmptyItems(after.Lists[f.Tag])
			if slices.EqualFunc(a, b, maps.Equal) {
				continue
			}
			old, cur = listJSON(a), listJSON(b)
		}
		if old == nil && cur == nil {
			continue // empty both ways: the document shows neither
		}
		op := ChangeReplace
		switch {
		case old == nil:
			op = ChangeSet
		case cur == nil:
			op = ChangeClear
		}
		out = append(out, FieldChange{Tag: f.Tag, Op: op, Old: old, New: cur})
	}
	return out
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
