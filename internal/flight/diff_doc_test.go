package flight

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// A diff is the difference of the two states' documents: each change's
// old and new values are the bytes each document holds under its tag (nil
// when absent), and every other field's bytes are equal in both. The
// values are strings drawn to need escapes, so that any rendering of a
// value other than the document's shows.
func TestDiffIsTheDocumentsDifference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	values := []string{"", "A1", "é\\\"<", "\u2028", "\xff", "x\n"}
	value := func() string { return values[r.IntN(len(values))] }
	item := func() Item {
		it := Item{}
		for range r.IntN(3) {
			it[value()+"K"] = value()
		}
		return it
	}
	items := listsOf(r, item)
	fields := Fields()
	state := func(flid FLID) State {
		s := NewState(flid)
		fillSome(r, &s, value, item, items)
		return s
	}
	doc := func(s State) map[string]json.RawMessage {
		b, err := CanonicalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for n := range 3000 {
		before := state(7)
		after := state(7)
		if r.IntN(2) == 0 { // a few fields apart
			after = before.Clone()
			for range 1 + r.IntN(3) {
				f := fields[r.IntN(len(fields))]
				switch f.Kind {
				case KindScalar:
					after.Scalars[f.Tag] = value()
				case KindAnomaly:
					after.Anomalies[f.Tag] = item()
				default:
					after.Lists[f.Tag] = append(CloneItems(after.Lists[f.Tag]), item())
				}
			}
		}
		a, b := doc(before), doc(after)
		changed := map[string]bool{}
		for _, c := range Diff(before, after) {
			changed[c.Tag] = true
			if !bytes.Equal(c.Old, a[c.Tag]) || !bytes.Equal(c.New, b[c.Tag]) || (c.Old == nil) != (a[c.Tag] == nil) || (c.New == nil) != (b[c.Tag] == nil) {
				t.Fatalf("case %d: %s: old %s new %s, the documents hold %s and %s", n, c.Tag, c.Old, c.New, a[c.Tag], b[c.Tag])
			}
			want := ChangeReplace
			switch {
			case a[c.Tag] == nil:
				want = ChangeSet
			case b[c.Tag] == nil:
				want = ChangeClear
			}
			if c.Op != want {
				t.Fatalf("case %d: %s: op %s, want %s", n, c.Tag, c.Op, want)
			}
		}
		for _, f := range fields {
			if !changed[f.Tag] && !bytes.Equal(a[f.Tag], b[f.Tag]) {
				t.Fatalf("case %d: %s differs (%s, %s) and is not in the diff", n, f.Tag, a[f.Tag], b[f.Tag])
			}
		}
	}
}
