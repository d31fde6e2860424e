package store_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// fullRecord is a snapshot record with every mapped field populated: each
// collection with two items carrying every item column plus an unmapped
// attribute, anomalies and records. variant changes one gate.
func fullRecord(flid flight.FLID, variant int) store.SnapshotRecord {
	var cmds []flight.Command
	for _, f := range flight.Fields() {
		switch f.Kind {
		case flight.KindScalar:
			v := fmt.Sprintf("%s-%d", f.Tag, flid%89)
			if f.TypedTimeColumn != "" {
				v = "09SEP261200"
			}
			cmds = append(cmds, flight.Command{Tag: f.Tag, Op: flight.OpSet, Value: v})
		case flight.KindCollection:
			var items []flight.Item
			for k := 1; k <= 2; k++ {
				it := flight.Item{"XTRA": "x\"" + strconv.Itoa(k)} // a key without a column: attrs
				if f.SeqAttr != "" {
					it[f.SeqAttr] = strconv.Itoa(k)
				}
				for _, c := range f.ItemColumns {
					it[c] = strings.ToLower(c) + "-" + strconv.Itoa(k)
				}
				if f.Tag == "GTDT" && k == 1 {
					it["GATE"] = "A" + strconv.Itoa(variant)
				}
				items = append(items, it)
			}
			cmds = append(cmds, flight.Command{Tag: f.Tag, Op: flight.OpReplace, Items: items})
		case flight.KindAnomaly:
			cmds = append(cmds, flight.Command{Tag: f.Tag, Op: flight.OpSet, Anomaly: flight.Item{"DDES": "HKG", flight.TextKey: "wx"}})
		case flight.KindRecord:
			cmds = append(cmds, flight.Command{Tag: f.Tag, Op: flight.OpReplace, Items: []flight.Item{{"CODE": "X", flight.TextKey: "t"}}})
		}
	}
	return store.SnapshotRecord{Day: day9, Cmds: flight.Commands{FLID: flid, Full: true, Cmds: cmds}}
}

// A snapshot large enough that its child rows go by COPY reads back exactly
// as merged, and so does the next generation that changes some of them.
func TestLargeSnapshotReadsBackExactly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const n = 1100 // 2,200 rows per child table: above the COPY threshold
	for gen := 1; gen <= 2; gen++ {
		var records []store.SnapshotRecord
		want := map[flight.FLID]flight.State{}
		for i := range n {
			id := flight.FLID(700000 + i)
			variant := 1
			if gen == 2 && i%10 == 0 {
				variant = 2
			}
			r := fullRecord(id, variant)
			records = append(records, r)
			s, _, err := flight.Apply(flight.NewState(id), r.Cmds)
			if err != nil {
				t.Fatal(err)
			}
			want[id] = s
		}
		f.mustSnapshot(day9, records...)
		got := f.flights()
		if len(got) != n {
			t.Fatalf("generation %d: %d flights, want %d", gen, len(got), n)
		}
		for id, w := range want {
			g := got[id]
			if diff := cmp.Diff(w.Scalars, g.Scalars); diff != "" {
				t.Fatalf("generation %d flight %s scalars (-want +got):\n%s", gen, id, diff)
			}
			if diff := cmp.Diff(w.Lists, g.Lists); diff != "" {
				t.Fatalf("generation %d flight %s collections (-want +got):\n%s", gen, id, diff)
			}
			if diff := cmp.Diff(w.Anomalies, g.Anomalies); diff != "" {
				t.Fatalf("generation %d flight %s anomalies (-want +got):\n%s", gen, id, diff)
			}
		}
	}
}
