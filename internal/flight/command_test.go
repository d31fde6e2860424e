package flight

import (
	"errors"
	"testing"
)

func TestCommandsForAndExpanded(t *testing.T) {
	cmds := Commands{FLID: 1, Full: true, Cmds: []Command{
		{Tag: "FLNO", Op: OpSet, Value: "CA100"},
		{Tag: "GTDT", Op: OpReplace, Items: []Item{{"GTNO": "1", "GATE": "A1"}}},
	}}
	if err := cmds.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := cmds.For("ESTT").Op; got != OpClear {
		t.Fatalf("full snapshot absent ESTT = %s, want CLEAR", got)
	}
	inc := cmds
	inc.Full = false
	if got := inc.For("ESTT").Op; got != OpUnchanged {
		t.Fatalf("increment absent ESTT = %s, want UNCHANGED", got)
	}
	exp := cmds.Expanded()
	if len(exp) != len(Fields()) {
		t.Fatalf("Expanded len = %d", len(exp))
	}
	for i, f := range Fields() {
		if exp[i].Tag != f.Tag {
			t.Fatalf("Expanded[%d] = %s, want %s", i, exp[i].Tag, f.Tag)
		}
	}
	if exp[FieldOrder("FLNO")].Value != "CA100" || exp[FieldOrder("GTDT")].Op != OpReplace {
		t.Fatal("Expanded lost explicit commands")
	}
}

func TestCommandsValidateRejects(t *testing.T) {
	tests := []struct {
		name string
		cmds Commands
	}{
		{"unknown tag", Commands{Cmds: []Command{{Tag: "XXXX", Op: OpSet, Value: "1"}}}},
		{"out of order", Commands{Cmds: []Command{{Tag: "GTDT", Op: OpClear}, {Tag: "FLNO", Op: OpClear}}}},
		{"duplicate", Commands{Cmds: []Command{{Tag: "FLNO", Op: OpClear}, {Tag: "FLNO", Op: OpClear}}}},
		{"set on collection", Commands{Cmds: []Command{{Tag: "GTDT", Op: OpSet, Value: "x"}}}},
		{"replace on scalar", Commands{Cmds: []Command{{Tag: "FLNO", Op: OpReplace, Items: []Item{{}}}}}},
		{"empty scalar set", Commands{Cmds: []Command{{Tag: "FLNO", Op: OpSet}}}},
		{"empty replace", Commands{Cmds: []Command{{Tag: "GTDT", Op: OpReplace}}}},
		{"nil item", Commands{Cmds: []Command{{Tag: "SRVT", Op: OpReplace, Items: []Item{nil}}}}},
		{"empty record item", Commands{Cmds: []Command{{Tag: "SRVT", Op: OpReplace, Items: []Item{{}}}}}},
		{"empty item beside a real one", Commands{Cmds: []Command{{Tag: "PORT", Op: OpReplace, Items: []Item{{"PTNO": "1"}, {}}}}}},
		{"empty anomaly set", Commands{Cmds: []Command{{Tag: "FDIV", Op: OpSet}}}},
		{"clear with payload", Commands{Cmds: []Command{{Tag: "FLNO", Op: OpClear, Value: "x"}}}},
		{"unknown op", Commands{Cmds: []Command{{Tag: "FLNO", Op: Op(9)}}}},
		{"flid too big", Commands{FLID: MaxFLID + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cmds.Validate(); !errors.Is(err, ErrInvalidCommand) {
				t.Fatalf("Validate() = %v, want ErrInvalidCommand", err)
			}
		})
	}
}

func TestOpText(t *testing.T) {
	for _, op := range []Op{OpUnchanged, OpSet, OpClear, OpReplace} {
		b, err := op.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Op
		if err := back.UnmarshalText(b); err != nil || back != op {
			t.Fatalf("round trip %s = %s, %v", op, back, err)
		}
	}
	var o Op
	if err := o.UnmarshalText([]byte("MERGE")); err == nil {
		t.Fatal("unknown op accepted")
	}
	if Op(7).String() != "Op(7)" {
		t.Fatal(Op(7).String())
	}
}
