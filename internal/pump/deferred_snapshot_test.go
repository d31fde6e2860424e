package pump_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/sis/sistest"
)

// A snapshot large enough that its records are decoded again, a chunk at
// a time, as the store applies them (pump.DeferRecordsFrom) stores every
// flight exactly as its records say, decoded once: the same scalars,
// collections and anomalies, and one state and one notice event each.
func TestDeferredSnapshotStoresWhatItsRecordsSay(t *testing.T) {
	eachBackend(t, deferredSnapshotStoresWhatItsRecordsSay)
}

func deferredSnapshotStoresWhatItsRecordsSay(t *testing.T, h *harness) {
	body := sistest.DNLD(2700)
	if len(body) < pump.DeferRecordsFrom {
		t.Fatalf("the DNLD has %d bytes, fewer than the %d from which records are deferred", len(body), pump.DeferRecordsFrom)
	}
	msg, err := sis.DecodeString(string(body), sis.Options{Location: h.feed.Location})
	if err != nil {
		t.Fatal(err)
	}
	want := map[flight.FLID]flight.State{}
	for _, r := range msg.Records {
		s, _, err := flight.Apply(flight.NewState(r.FLID), r.Commands)
		if err != nil {
			t.Fatal(err)
		}
		want[r.FLID] = s
	}

	id := h.put(string(body))
	h.drain(h.newPump())
	h.wantRow(id, "SUCCEEDED", "")
	got := h.flights()
	if len(got) != len(want) {
		t.Fatalf("%d flights stored, want %d", len(got), len(want))
	}
	for f, w := range want {
		g := got[f]
		if diff := cmp.Diff(w.Scalars, g.Scalars); diff != "" {
			t.Fatalf("flight %s scalars (-decoded once +stored):\n%s", f, diff)
		}
		if diff := cmp.Diff(w.Lists, g.Lists); diff != "" {
			t.Fatalf("flight %s collections (-decoded once +stored):\n%s", f, diff)
		}
		if diff := cmp.Diff(w.Anomalies, g.Anomalies); diff != "" {
			t.Fatalf("flight %s anomalies (-decoded once +stored):\n%s", f, diff)
		}
	}
	states, notices := h.recordKinds()
	if n := states; n != len(want) {
		t.Fatalf("%d state events, want %d", n, len(want))
	}
	if n := notices; n != len(want) {
		t.Fatalf("%d notices, want %d", n, len(want))
	}
}
