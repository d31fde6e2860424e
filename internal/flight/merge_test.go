package flight

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func gates(pairs ...string) []Item {
	var out []Item
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Item{"GTNO": pairs[i], "GATE": pairs[i+1]})
	}
	return out
}

// base is CA100 of processing rules R6.1: gates G28 (1) and G33 (2), ESTT 0900.
func base() State {
	s := NewState(121112312)
	s.OperationDay = "2026-09-09"
	s.StateVersion = 7
	s.Scalars["FLNO"] = "CA100"
	s.Scalars["ESTT"] = "09SEP260900"
	s.Lists["GTDT"] = gates("1", "G28", "2", "G33")
	s.Lists["DELY"] = []Item{{"CODE": "81", "DURA": "30", "TEXT": "ATC"}}
	s.Anomalies["FDIV"] = Item{"DDES": "HKG", "DDIR": "TO", "TEXT": "weather"}
	return s
}

func TestApply(t *testing.T) {
	cases := []struct {
		name        string
		cmds        Commands
		want        func(State) State
		wantChanged []string
	}{
		{
			name: "GTDT increment replaces the gates, nothing else moves (processing rules R6.1)",
			cmds: Commands{FLID: 121112312, Cmds: []Command{{Tag: "GTDT", Op: OpReplace,
				Items: []Item{{"GTNO": "1", "GATE": "A1", "GTYP": "D"}, {"GTNO": "3", "GATE": "B2", "GTYP": "I"}}}}},
			want: func(s State) State {
				s.Lists["GTDT"] = []Item{{"GTNO": "1", "GATE": "A1", "GTYP": "D"}, {"GTNO": "3", "GATE": "B2", "GTYP": "I"}}
				return s
			},
			wantChanged: []string{"GTDT"},
		},
		{
			name:        "sequence-0 clear removes the collection",
			cmds:        Commands{FLID: 121112312, Cmds: []Command{{Tag: "GTDT", Op: OpClear}}},
			want:        func(s State) State { delete(s.Lists, "GTDT"); return s },
			wantChanged: []string{"GTDT"},
		},
		{
			name:        "absent field in an increment is unchanged",
			cmds:        Commands{FLID: 121112312, Cmds: []Command{{Tag: "ACTT", Op: OpSet, Value: "09SEP261012"}}},
			want:        func(s State) State { s.Scalars["ACTT"] = "09SEP261012"; return s },
			wantChanged: []string{"ACTT"},
		},
		{
			name: "full snapshot clears every field it omits",
			cmds: Commands{FLID: 121112312, Full: true, Cmds: []Command{
				{Tag: "FLNO", Op: OpSet, Value: "CA100"},
				{Tag: "GTDT", Op: OpReplace, Items: gates("1", "A1")},
			}},
			want: func(s State) State {
				delete(s.Scalars, "ESTT")
				delete(s.Lists, "DELY")
				delete(s.Anomalies, "FDIV")
				s.Lists["GTDT"] = gates("1", "A1")
				return s
			},
			wantChanged: []string{"ESTT", "GTDT", "DELY", "FDIV"},
		},
		{
			name: "anomaly Set replaces the whole object",
			cmds: Commands{FLID: 121112312, Cmds: []Command{{Tag: "FDIV", Op: OpSet, Anomaly: Item{"DDES": "CAN"}}}},
			want: func(s State) State {
				s.Anomalies["FDIV"] = Item{"DDES": "CAN"}
				return s
			},
			wantChanged: []string{"FDIV"},
		},
		{
			name:        "empty anomaly clears it",
			cmds:        Commands{FLID: 121112312, Cmds: []Command{{Tag: "FDIV", Op: OpClear}}},
			want:        func(s State) State { delete(s.Anomalies, "FDIV"); return s },
			wantChanged: []string{"FDIV"},
		},
		{
			name: "same values change nothing",
			cmds: Commands{FLID: 121112312, Cmds: []Command{
				{Tag: "FLNO", Op: OpSet, Value: "CA100"},
				{Tag: "GTDT", Op: OpReplace, Items: gates("1", "G28", "2", "G33")},
				{Tag: "CKDT", Op: OpClear},
			}},
			want:        func(s State) State { return s },
			wantChanged: nil,
		},
		{
			name: "same items in another order is a change",
			cmds: Commands{FLID: 121112312, Cmds: []Command{{Tag: "GTDT", Op: OpReplace, Items: gates("2", "G33", "1", "G28")}}},
			want: func(s State) State {
				s.Lists["GTDT"] = gates("2", "G33", "1", "G28")
				return s
			},
			wantChanged: []string{"GTDT"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur := base()
			before := cur.Clone()
			next, changed, err := Apply(cur, c.cmds)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want(base()), next); diff != "" {
				t.Errorf("next state (-want +got):\n%s", diff)
			}
			if !slices.Equal(changed, c.wantChanged) {
				t.Errorf("changed = %v, want %v", changed, c.wantChanged)
			}
			if diff := cmp.Diff(before, cur); diff != "" {
				t.Errorf("Apply modified its input:\n%s", diff)
			}
			if diff := cmp.Diff(c.wantChanged, ChangedKeys(cur, next)); len(c.wantChanged) > 0 && diff != "" {
				t.Errorf("ChangedKeys disagrees with Apply:\n%s", diff)
			}
		})
	}
}

func TestApplyRefusesInvalidCommands(t *testing.T) {
	for name, cmds := range map[string]Commands{
		"wrong flight":     {FLID: 5, Cmds: []Command{{Tag: "FLNO", Op: OpSet, Value: "X"}}},
		"replace a scalar": {FLID: 121112312, Cmds: []Command{{Tag: "FLNO", Op: OpReplace, Items: gates("1", "A")}}},
		"unknown tag":      {FLID: 121112312, Cmds: []Command{{Tag: "ZZZZ", Op: OpSet, Value: "X"}}},
	} {
		if _, _, err := Apply(base(), cmds); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("%s: err = %v, want ErrInvalidCommand", name, err)
		}
	}
}
