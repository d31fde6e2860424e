package flight

import (
	"math/rand/v2"
	"testing"
	"time"
)

// referenceJSON is the plain encoding/json rendering CanonicalJSON must
// match byte for byte (sorted map keys, HTML escaping off).
func referenceJSON(t *testing.T, s State) []byte {
	t.Helper()
	doc := map[string]any{KeyFLID: s.FLID.String(), KeyStateVersion: s.StateVersion}
	if s.OperationDay != "" {
		doc[KeyOperationDay] = s.OperationDay
	}
	if !s.UpdatedAt.IsZero() {
		doc[KeyUpdatedAt] = s.UpdatedAt.UTC().Format(UpdatedAtLayout)
	}
	for k, v := range s.Scalars {
		if v != "" {
			doc[k] = v
		}
	}
	for k, items := range s.Lists {
		if len(items) == 0 {
			continue
		}
		list := make([]map[string]string, len(items))
		for i, it := range items {
			list[i] = it
		}
		doc[k] = list
	}
	for k, a := range s.Anomalies {
		if len(a) > 0 {
			doc[k] = map[string]string(a)
		}
	}
	out, err := encodeSorted(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCanonicalJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", "0", " ", "\"", "\\", "<", ">", "&", "\n", "\t", "\r", "\x01", "\x1f", "\x7f",
		"é", "中", "\u2028", "\u2029", "\xff", "\xc3", "😀", "/"}
	str := func() string {
		var b []byte
		for range r.IntN(8) {
			b = append(b, alphabet[r.IntN(len(alphabet))]...)
		}
		return string(b)
	}
	fields := Fields()
	for range 2000 {
		s := NewState(FLID(r.Uint64N(uint64(MaxFLID))))
		s.StateVersion = r.Int64N(1 << 40)
		if r.IntN(2) == 0 {
			s.OperationDay = "2026-09-09"
		}
		if r.IntN(2) == 0 {
			s.UpdatedAt = time.Unix(r.Int64N(1<<32), r.Int64N(1e9))
		}
		for range r.IntN(10) {
			f := fields[r.IntN(len(fields))]
			switch f.Kind {
			case KindScalar:
				s.Scalars[f.Tag] = str()
			case KindAnomaly:
				s.Anomalies[f.Tag] = Item{str(): str(), TextKey: str()}
			default:
				var items []Item
				for range r.IntN(3) {
					items = append(items, Item{str(): str(), "K": str()})
				}
				s.Lists[f.Tag] = items
			}
		}
		got, err := CanonicalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if want := referenceJSON(t, s); string(got) != string(want) {
			t.Fatalf("CanonicalJSON differs from encoding/json:\n got %s\nwant %s", got, want)
		}
	}
}

func BenchmarkCanonicalJSON(b *testing.B) {
	s := NewState(121112312)
	for _, f := range Fields() {
		switch f.Kind {
		case KindScalar:
			s.Scalars[f.Tag] = "09SEP261200"
		case KindAnomaly:
			s.Anomalies[f.Tag] = Item{"DDES": "HKG", TextKey: "weather"}
		default:
			s.Lists[f.Tag] = []Item{{"A": "1", "B": "two"}, {"A": "2", "B": "three"}}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CanonicalJSON(s); err != nil {
			b.Fatal(err)
		}
	}
}

// The table walk renders what the sorted key list renders (the general
// path, kept for maps with keys that are not mapped fields of their kind),
// byte for byte: empty scalars, empty lists, empty items and anomalies
// included; and a state with a stray key goes the general path.
func TestCanonicalJSONTableWalkMatchesSortedKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	values := []string{"", "A1", "é\"<", "\u2028", "\xff"}
	value := func() string { return values[r.IntN(len(values))] }
	item := func() Item {
		it := Item{}
		for range r.IntN(4) {
			it[value()+"K"] = value()
		}
		return it
	}
	items := listsOf(r, item)
	for n := range 3000 {
		s := NewState(FLID(r.Uint64N(uint64(MaxFLID))))
		s.StateVersion = r.Int64N(1 << 40)
		if r.IntN(2) == 0 {
			s.OperationDay = "2026-09-09"
		}
		if r.IntN(2) == 0 {
			s.UpdatedAt = time.Unix(r.Int64N(1<<32), r.Int64N(1e9))
		}
		fillSome(r, &s, value, item, items)
		stray := r.IntN(4) == 0
		if stray {
			switch r.IntN(3) {
			case 0:
				s.Scalars["ZZZZ"] = value()
			case 1:
				s.Lists["FLNO"] = []Item{item()} // a scalar's tag in the lists
			default:
				s.Anomalies["AAAA"] = item()
			}
		}
		want, wantErr := appendCanonicalSorted([]byte("prefix"), s)
		got, ok := appendCanonicalByTable([]byte("prefix"), &s)
		if ok == stray {
			t.Fatalf("case %d: table walk ok = %v with a stray key %v", n, ok, stray)
		}
		if ok && (wantErr != nil || string(got) != string(want)) {
			t.Fatalf("case %d: table walk\n got %s\nwant %s (%v)", n, got, want, wantErr)
		}
		if !ok && string(got) != "prefix" {
			t.Fatalf("case %d: a refused table walk left %q", n, got)
		}
		all, err := AppendCanonicalJSON([]byte("prefix"), s)
		if string(all) != string(want) || (err == nil) != (wantErr == nil) {
			t.Fatalf("case %d: AppendCanonicalJSON = %s, %v; want %s, %v", n, all, err, want, wantErr)
		}
	}
}
