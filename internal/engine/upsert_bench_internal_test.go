package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// lenDoor counts a record as its bytes and lets every record through.
type lenDoor struct{}

func (lenDoor) Of(key, value []byte, headers []Header) RecordSize {
	n := len(key) + len(value)
	for _, h := range headers {
		n += len(h.Key) + len(h.Value)
	}
	return RecordSize{Uncompressed: n, Compressed: n}
}
func (lenDoor) Fits(RecordSize) bool { return true }
func (lenDoor) Max() int             { return 1 << 20 }

// BenchmarkUpsertEvent renders one FLOP's event (state, notice, changes,
// both door checks) on a flight of 30 scalars and a few list items.
func BenchmarkUpsertEvent(b *testing.B) {
	st := flight.NewState(123456)
	st.OperationDay, st.StateVersion, st.UpdatedAt, st.LastMessageID = "2026-09-09", 42, time.Date(2026, 9, 9, 1, 2, 3, 0, time.UTC), 7
	for i, f := range flight.Fields()[:30] { // the first 30 scalars
		st.Scalars[f.Tag] = fmt.Sprintf("value %d of the flight", i)
	}
	st.Lists["GTDT"] = []flight.Item{{"GATE": "A12", "GTYP": "D"}, {"GATE": "A13", "GTYP": "D"}}
	diff := []flight.FieldChange{{Tag: "ESTT", Op: "SET", Old: []byte(`"09SEP261000"`), New: []byte(`"09SEP261010"`)}}
	meta := Meta{MessageID: 99, Type: "FLOP", Styp: "ESTT", Door: lenDoor{}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := upsertEvent(&st, []string{"ESTT"}, diff, meta); err != nil {
			b.Fatal(err)
		}
	}
}
