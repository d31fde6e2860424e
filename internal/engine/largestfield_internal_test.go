package engine

import "testing"

// largestField on documents a record never holds as well as on those it
// does: not JSON, not an object, an empty object, a list or an object as
// the largest member.
func TestLargestField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		doc         string
		name        string
		size, items int
	}{
		{doc: `not json`},
		{doc: `[1,2,3]`},
		{doc: `{}`},
		{doc: `{"A":"x"}`, name: "A", size: 3},
		{doc: `{"A":[1,2,3],"B":1}`, name: "A", size: 7, items: 3},
		{doc: `{"A":{"x":1,"y":2},"B":1}`, name: "A", size: 13, items: 2},
		{doc: `{"A":{"x":1,"y":2},"B":"a string, longer"}`, name: "B", size: 18},
		{doc: `{"A":[],"B":{}}`, name: "A", size: 2},
	} {
		name, size, items := largestField([]byte(c.doc))
		if name != c.name || size != c.size || items != c.items {
			t.Errorf("largestField(%s) = %q %d %d, want %q %d %d", c.doc, name, size, items, c.name, c.size, c.items)
		}
	}
}
