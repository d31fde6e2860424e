package flight

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// applyCopyAll is Apply as it was before it copied maps on write: every
// map of cur copied up front, every command written. Apply must return
// what it returns, maps and all.
func applyCopyAll(cur State, cmds Commands) (State, []string) {
	next := cur
	next.Scalars, next.Lists, next.Anomalies = ownMap(cur.Scalars), ownMap(cur.Lists), ownMap(cur.Anomalies)
	var changed []string
	todo := cmds.Cmds
	if cmds.Full {
		todo = cmds.Expanded()
	}
	for _, cmd := range todo {
		if cmd.Op == OpUnchanged {
			continue
		}
		var diff bool
		switch fieldTable[FieldOrder(cmd.Tag)].Kind {
		case KindScalar:
			old, had := next.Scalars[cmd.Tag]
			if cmd.Op == OpClear {
				delete(next.Scalars, cmd.Tag)
				diff = had
			} else {
				next.Scalars[cmd.Tag] = cmd.Value
				diff = !had || old != cmd.Value
			}
		case KindAnomaly:
			old, had := next.Anomalies[cmd.Tag]
			if cmd.Op == OpClear {
				delete(next.Anomalies, cmd.Tag)
				diff = had
			} else {
				next.Anomalies[cmd.Tag] = cmd.Anomaly
				diff = !had || !maps.Equal(old, cmd.Anomaly)
			}
		default:
			old, had := next.Lists[cmd.Tag]
			if cmd.Op == OpClear {
				delete(next.Lists, cmd.Tag)
				diff = had && len(old) > 0
			} else {
				next.Lists[cmd.Tag] = cmd.Items
				diff = !slices.EqualFunc(old, cmd.Items, maps.Equal)
			}
		}
		if diff {
			changed = append(changed, cmd.Tag)
		}
	}
	return next, changed
}

// Apply copies a map of cur only when a command writes to it; whatever it
// shares, the next state and the changed tags are those of copying every
// map up front, cur is left as it was, and the next state's maps are never
// nil. Commands that set what a field holds and clear what is absent are
// drawn often, as the maps they leave shared are what changed.
func TestApplyCopyOnWriteMatchesCopyAll(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	values := []string{"", "A1", "B2"}
	value := func() string { return values[r.IntN(len(values))] }
	items := func() []Item {
		var out []Item
		for range r.IntN(3) {
			out = append(out, Item{"K": value() + "x"})
		}
		return out
	}
	fields := Fields()
	for n := range 5000 {
		cur := NewState(FLID(1 + r.IntN(1000)))
		switch r.IntN(8) {
		case 0:
			cur.Scalars, cur.Lists, cur.Anomalies = nil, nil, nil // built by hand
		case 1:
			cur.Lists = nil
		}
		fillSome(r, &cur, value, func() Item { return Item{"K": value()} }, items)
		before := cur.Clone()
		if cur.Scalars == nil {
			before.Scalars, before.Lists, before.Anomalies = nil, nil, nil
		} else if cur.Lists == nil {
			before.Lists = nil
		}
		cmds := Commands{FLID: cur.FLID, Full: r.IntN(5) == 0}
		for _, f := range fields {
			if r.IntN(6) > 0 {
				continue
			}
			cmd := Command{Tag: f.Tag, Op: OpClear}
			switch v := value(); {
			case v == "" && r.IntN(2) == 0:
			case f.Kind == KindScalar:
				cmd = Command{Tag: f.Tag, Op: OpSet, Value: v + "1"}
				if old := cur.Scalars[f.Tag]; old != "" && r.IntN(2) == 0 {
					cmd.Value = old // what it holds
				}
			case f.Kind == KindAnomaly:
				cmd = Command{Tag: f.Tag, Op: OpSet, Anomaly: Item{"K": v + "1"}}
				if old, ok := cur.Anomalies[f.Tag]; ok && len(old) > 0 && r.IntN(2) == 0 {
					cmd.Anomaly = old.Clone()
				}
			default:
				cmd = Command{Tag: f.Tag, Op: OpReplace, Items: append(items(), Item{"K": "y"})}
				if old := cur.Lists[f.Tag]; len(old) > 0 && r.IntN(2) == 0 {
					cmd.Items = CloneItems(old)
				}
			}
			cmds.Cmds = append(cmds.Cmds, cmd)
		}
		wantNext, wantChanged := applyCopyAll(before.Clone(), cmds)
		next, changed, err := Apply(cur, cmds)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cur, before) {
			t.Fatalf("case %d: Apply changed cur:\n got %+v\nwant %+v", n, cur, before)
		}
		if next.Scalars == nil || next.Lists == nil || next.Anomalies == nil {
			t.Fatalf("case %d: a nil map in the next state: %+v", n, next)
		}
		if !slices.Equal(changed, wantChanged) {
			t.Fatalf("case %d: changed %v, want %v", n, changed, wantChanged)
		}
		if !reflect.DeepEqual(next, wantNext) {
			t.Fatalf("case %d: next state\n got %+v\nwant %+v", n, next, wantNext)
		}
		got, err := CanonicalJSON(next)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := CanonicalJSON(wantNext); string(got) != string(want) {
			t.Fatalf("case %d: document\n got %s\nwant %s", n, got, want)
		}
	}
}
