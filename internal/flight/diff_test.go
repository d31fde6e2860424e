package flight

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	base := func() State {
		s := NewState(12345678)
		s.Scalars["FLNO"] = "1234"
		s.Scalars["ESTT"] = "09SEP260900"
		s.Lists["GTDT"] = []Item{{"GTNO": "1", "GATE": "B7"}}
		s.Anomalies["FDIV"] = Item{"DDES": "PVG"}
		return s
	}
	type change struct{ tag, op, old, new string }
	cases := []struct {
		name string
		edit func(s *State)
		want []change
	}{
		{"nothing", func(*State) {}, nil},
		{"a scalar replaced", func(s *State) { s.Scalars["ESTT"] = "09SEP260930" },
			[]change{{"ESTT", ChangeReplace, `"09SEP260900"`, `"09SEP260930"`}}},
		{"a scalar set", func(s *State) { s.Scalars["ACTT"] = "09SEP260905" },
			[]change{{"ACTT", ChangeSet, "", `"09SEP260905"`}}},
		{"a scalar cleared", func(s *State) { delete(s.Scalars, "ESTT") },
			[]change{{"ESTT", ChangeClear, `"09SEP260900"`, ""}}},
		{"a scalar emptied reads as cleared", func(s *State) { s.Scalars["ESTT"] = "" },
			[]change{{"ESTT", ChangeClear, `"09SEP260900"`, ""}}},
		{"a collection replaced", func(s *State) { s.Lists["GTDT"] = []Item{{"GTNO": "1", "GATE": "C3"}} },
			[]change{{"GTDT", ChangeReplace, `[{"GATE":"B7","GTNO":"1"}]`, `[{"GATE":"C3","GTNO":"1"}]`}}},
		{"an empty item is no value", func(s *State) { s.Lists["PSDT"] = []Item{{}} }, nil},
		{"an anomaly cleared", func(s *State) { delete(s.Anomalies, "FDIV") },
			[]change{{"FDIV", ChangeClear, `{"DDES":"PVG"}`, ""}}},
		{"several, in canonical field order", func(s *State) {
			s.Anomalies["FRET"] = Item{"TEXT": "x"}
			s.Scalars["FLNO"] = "1235"
			delete(s.Lists, "GTDT")
		}, []change{
			{"FLNO", ChangeReplace, `"1234"`, `"1235"`},
			{"GTDT", ChangeClear, `[{"GATE":"B7","GTNO":"1"}]`, ""},
			{"FRET", ChangeSet, "", `{"TEXT":"x"}`},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, after := base(), base()
			c.edit(&after)
			got := Diff(before, after)
			if len(got) != len(c.want) {
				t.Fatalf("got %d changes %+v, want %+v", len(got), got, c.want)
			}
			for i, w := range c.want {
				g := got[i]
				if g.Tag != w.tag || g.Op != w.op || string(g.Old) != w.old || string(g.New) != w.new {
					t.Errorf("change %d = %s %s %s → %s, want %s %s %s → %s", i, g.Tag, g.Op, g.Old, g.New, w.tag, w.op, w.old, w.new)
				}
			}
			// Read backwards, the same fields, the other way round.
			back := Diff(after, before)
			if len(back) != len(got) {
				t.Fatalf("reverse diff has %d changes, want %d", len(back), len(got))
			}
			for i := range back {
				if string(back[i].Old) != string(got[i].New) || string(back[i].New) != string(got[i].Old) {
					t.Errorf("reverse change %d: %+v vs %+v", i, back[i], got[i])
				}
			}
		})
	}
}

// A diff names the fields ChangedKeys names, except those only emptied
// both ways.
func TestDiffAgreesWithChangedKeys(t *testing.T) {
	a := NewState(1)
	a.Scalars["STND"] = "101"
	a.Lists["CKDT"] = []Item{{"CKNO": "1", "CHKC": "A01"}}
	b := a.Clone()
	b.Scalars["STND"] = "102"
	b.Lists["CKDT"] = nil
	b.Anomalies["FLAB"] = Item{"TEXT": "late"}
	var tags []string
	for _, c := range Diff(a, b) {
		tags = append(tags, c.Tag)
	}
	if want := ChangedKeys(a, b); len(tags) != len(want) || tags[0] != want[0] || tags[1] != want[1] || tags[2] != want[2] {
		t.Fatalf("Diff tags %v, ChangedKeys %v", tags, want)
	}
}

// A change reads as JSON with its values as the document shows them, and
// reads back the same.
func TestFieldChangeJSON(t *testing.T) {
	a := NewState(1)
	b := a.Clone()
	b.Lists["GTDT"] = []Item{{"GTNO": "1", "GATE": "B7"}}
	got, err := json.Marshal(Diff(a, b))
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"field":"GTDT","op":"Set","new":[{"GATE":"B7","GTNO":"1"}]}]`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	var back []FieldChange
	if err := json.Unmarshal(got, &back); err != nil || len(back) != 1 || string(back[0].New) != `[{"GATE":"B7","GTNO":"1"}]` || back[0].Old != nil {
		t.Fatalf("read back %+v, %v", back, err)
	}
}

// AppendChanges renders a diff as the history's JSON: old or new left out
// when absent, lists and anomalies as the canonical document shows them.
func TestAppendChanges(t *testing.T) {
	t.Parallel()
	before := NewState(1)
	before.Lists["GTDT"] = []Item{{"GTNO": "1", "GATE": "B7"}}
	after := NewState(1)
	after.Lists["GTDT"] = []Item{{"GTNO": "1", "GATE": "C3"}}
	after.Anomalies["FDIV"] = Item{"DDES": "PVG"}
	got := string(AppendChanges(nil, Diff(before, after)))
	want := `[{"field":"GTDT","op":"Replace","old":[{"GATE":"B7","GTNO":"1"}],"new":[{"GATE":"C3","GTNO":"1"}]},` +
		`{"field":"FDIV","op":"Set","new":{"DDES":"PVG"}}]`
	if got != want {
		t.Fatalf("AppendChanges =\n%s\nwant\n%s", got, want)
	}
	if got := string(AppendChanges(nil, nil)); got != "[]" {
		t.Fatalf("no changes = %s, want []", got)
	}
}

// DiffFields over the tags Apply reports changed is Diff, for random
// states (empty values and empty items included, as old rows may hold)
// and random increments and full snapshots: a field no command changed
// never differs.
func TestDiffFieldsOfApplyIsDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	values := []string{"", "A1", "B2", "C3"}
	value := func() string { return values[r.IntN(len(values))] }
	items := func(empty bool) []Item {
		var out []Item
		for range r.IntN(3) {
			it := Item{"K": value()}
			if it["K"] == "" {
				delete(it, "K")
			}
			if len(it) == 0 && !empty {
				it["K"] = "X"
			}
			out = append(out, it)
		}
		return out
	}
	fields := Fields()
	for n := range 5000 {
		cur := NewState(FLID(1 + r.IntN(1000)))
		fillSome(r, &cur, value, func() Item { return Item{"K": value()} }, func() []Item { return items(true) })
		cmds := Commands{FLID: cur.FLID, Full: r.IntN(4) == 0}
		for _, f := range fields {
			if r.IntN(8) > 0 {
				continue
			}
			cmd := Command{Tag: f.Tag, Op: OpClear}
			switch v := value(); {
			case v == "":
			case f.Kind == KindScalar:
				cmd = Command{Tag: f.Tag, Op: OpSet, Value: v}
			case f.Kind == KindAnomaly:
				cmd = Command{Tag: f.Tag, Op: OpSet, Anomaly: Item{"K": v}}
			default:
				if its := items(false); len(its) > 0 {
					cmd = Command{Tag: f.Tag, Op: OpReplace, Items: its}
				}
			}
			cmds.Cmds = append(cmds.Cmds, cmd)
		}
		next, changed, err := Apply(cur, cmds)
		if err != nil {
			t.Fatal(err)
		}
		want := Diff(cur, next)
		if got := DiffFields(cur, next, changed); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: DiffFields over %v = %+v, Diff = %+v", n, changed, got, want)
		}
		// Any order of the tags, repeated or unmapped ones included.
		tags := append(slices.Clone(changed), changed...)
		tags = append(tags, KeyOperationDay)
		r.Shuffle(len(tags), func(i, j int) { tags[i], tags[j] = tags[j], tags[i] })
		if got := DiffFields(cur, next, tags); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: DiffFields over %v = %+v, Diff = %+v", n, tags, got, want)
		}
	}
}
