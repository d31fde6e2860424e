package flight

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/testsupport/golden"
)

func sampleState() State {
	s := NewState(121112312)
	s.OperationDay = "2026-09-09"
	s.StateVersion = 42
	s.UpdatedAt = time.Date(2026, 9, 9, 10, 15, 0, 123000000, time.FixedZone("CST", 8*3600))
	s.LastMessageID = 7
	s.Scalars["FLNO"] = "CA100"
	s.Scalars["SODT"] = "09SEP261015"
	s.Scalars["REMC"] = "<b>&\"quoted\"</b> 中文"
	s.Scalars["ESTT"] = "" // cleared: absent
	s.Lists["GTDT"] = []Item{
		{"GTNO": "1", "GATE": "A1", "GTYP": "D"},
		{"GTNO": "3", "GATE": "B2", "GTYP": "I"},
	}
	s.Lists["DELY"] = []Item{{"CODE": "93", "DURA": "0020", TextKey: "late inbound"}}
	s.Lists["SRVT"] = []Item{{}} // stored before an empty tag meant Clear: absent
	s.Lists["MAFL"] = []Item{{}, {"MFAL": "MU", "MFFN": "MU5101"}, {}}
	s.Lists["CKDT"] = nil // cleared: absent
	s.Anomalies["FDIV"] = Item{"DDES": "HKG", "DDIR": "TO", TextKey: "weather"}
	s.Anomalies["FRET"] = Item{} // cleared: absent
	return s
}

func TestCanonicalJSONGolden(t *testing.T) {
	got, err := CanonicalJSON(sampleState())
	if err != nil {
		t.Fatal(err)
	}
	golden.Equal(t, "canonical_state.json", got)
	if !json.Valid(got) {
		t.Fatal("not valid JSON")
	}
	if bytes.Contains(got, []byte(`\u003c`)) {
		t.Fatal("HTML escaping is on")
	}
}

func TestCanonicalJSONIsDeterministic(t *testing.T) {
	first, err := CanonicalJSON(sampleState())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := CanonicalJSON(sampleState().Clone())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatal("same state, different bytes")
		}
	}
}

func TestCanonicalJSONMinimalState(t *testing.T) {
	got, err := CanonicalJSON(State{FLID: 5, StateVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"FLID":"5","STATE_VERSION":1}` {
		t.Fatalf("got %s", got)
	}
}

func TestCanonicalJSONKeyCollision(t *testing.T) {
	tests := map[string]State{
		"scalar named FLID":     {Scalars: map[string]string{"FLID": "9"}},
		"scalar and list share": {Scalars: map[string]string{"GTDT": "x"}, Lists: map[string][]Item{"GTDT": {{"GTNO": "1"}}}},
		"anomaly named UPDATED": {UpdatedAt: time.Unix(1, 0), Anomalies: map[string]Item{"UPDATED_AT": {"A": "1"}}},
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := CanonicalJSON(s); !errors.Is(err, ErrKeyCollision) {
				t.Fatalf("error = %v, want ErrKeyCollision", err)
			}
		})
	}
}

func TestTombstoneJSON(t *testing.T) {
	got, err := TombstoneJSON(121112312, 43)
	if err != nil {
		t.Fatal(err)
	}
	golden.Equal(t, "tombstone.json", got)
}

func TestStateCloneIsDeep(t *testing.T) {
	s := sampleState()
	c := s.Clone()
	c.Scalars["FLNO"] = "X"
	c.Lists["GTDT"][0]["GATE"] = "Z"
	c.Anomalies["FDIV"]["DDES"] = "PEK"
	if s.Scalars["FLNO"] != "CA100" || s.Lists["GTDT"][0]["GATE"] != "A1" || s.Anomalies["FDIV"]["DDES"] != "HKG" {
		t.Fatal("Clone shares memory")
	}
}
