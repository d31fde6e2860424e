package flight

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A full snapshot that leaves a stored flight as it is (a day asked for
// again) is merged without allocating: its omitted fields are cleared by
// walking the field table, not through a slice of one command per field.
func TestApplyFullUnchangedAllocatesNothing(t *testing.T) {
	cur := base()
	var cmds Commands
	cmds.FLID, cmds.Full = cur.FLID, true
	for _, f := range Fields() {
		switch {
		case cur.Scalars[f.Tag] != "":
			cmds.Cmds = append(cmds.Cmds, Command{Tag: f.Tag, Op: OpSet, Value: cur.Scalars[f.Tag]})
		case cur.Lists[f.Tag] != nil:
			cmds.Cmds = append(cmds.Cmds, Command{Tag: f.Tag, Op: OpReplace, Items: CloneItems(cur.Lists[f.Tag])})
		case cur.Anomalies[f.Tag] != nil:
			cmds.Cmds = append(cmds.Cmds, Command{Tag: f.Tag, Op: OpSet, Anomaly: cur.Anomalies[f.Tag].Clone()})
		}
	}
	if _, changed, err := Apply(cur, cmds); err != nil || len(changed) != 0 {
		t.Fatalf("Apply: changed %v, error %v; want nothing changed", changed, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := Apply(cur, cmds); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Apply of an unchanged flight's full snapshot: %.0f allocations, want 0", allocs)
	}
}

// From a new flight's empty state, Apply reports as changed exactly the
// fields the next state holds, in canonical order (PresentKeys): the merge
// engine takes its changed tags for a new flight's write from it.
func TestApplyToNewStateChangesPresentKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	values := []string{"", "A1", "B2"}
	value := func() string { return values[r.IntN(len(values))] }
	for n := range 3000 {
		cmds := Commands{FLID: FLID(1 + r.IntN(1000)), Full: r.IntN(2) == 0}
		for _, f := range Fields() {
			if r.IntN(3) == 0 {
				continue
			}
			cmd := Command{Tag: f.Tag, Op: OpClear}
			switch v := value(); {
			case v == "" && r.IntN(2) == 0:
			case r.IntN(8) == 0:
				cmd.Op = OpUnchanged
			case f.Kind == KindScalar:
				cmd = Command{Tag: f.Tag, Op: OpSet, Value: v + "1"}
			case f.Kind == KindAnomaly:
				cmd = Command{Tag: f.Tag, Op: OpSet, Anomaly: Item{"K": v + "1"}}
			default:
				cmd = Command{Tag: f.Tag, Op: OpReplace, Items: []Item{{"K": v + "y"}}}
			}
			cmds.Cmds = append(cmds.Cmds, cmd)
		}
		next, changed, err := Apply(NewState(cmds.FLID), cmds)
		if err != nil {
			t.Fatal(err)
		}
		if want := PresentKeys(next); !slices.Equal(changed, want) {
			t.Fatalf("case %d: changed %v, want the present keys %v", n, changed, want)
		}
	}
}
