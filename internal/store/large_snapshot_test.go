package store_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// fullRecord is a snapshot record of day 9 with every mapped field
// populated and a key without a column in every item; variant changes one
// gate.
func fullRecord(flid flight.FLID, variant int) store.SnapshotRecord {
	return storetest.FullRecord(flid, day9, int(flid%89), "A"+strconv.Itoa(variant), true)
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
		out := f.mustSnapshot(day9, records...)
		got := f.flights()
		if len(got) != n {
			t.Fatalf("generation %d: %d flights, want %d", gen, len(got), n)
		}
		wantUpserts := n
		if gen == 2 {
			wantUpserts = n / 10
		}
		if out.Upserted != wantUpserts {
			t.Fatalf("generation %d: %d flights upserted, want %d", gen, out.Upserted, wantUpserts)
		}
		checkEvents(t, f, f.msgID, got, out.Versions, day9)
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

// checkEvents asserts that message msgID wrote exactly one KAFKA_SCHD
// upsert (the flight's canonical state as read back) and one KAFKA_MSG
// notice per written flight, in record order, with the flight's day, in
// one outbox row per flight.
func checkEvents(t *testing.T, f *fixture, msgID int64, states map[flight.FLID]flight.State, versions map[flight.FLID]int64, day string) {
	t.Helper()
	events := f.events(msgID)
	if len(events) != 2*len(versions) {
		t.Fatalf("message %d: %d events, want %d", msgID, len(events), 2*len(versions))
	}
	for i := 0; i < len(events); i += 2 {
		st, notice := events[i], events[i+1]
		id := flight.FLID(st.FLID)
		if st.Kind != store.KindState || st.Event != store.EventUpsert || notice.Kind != store.KindNotice || notice.FLID != st.FLID {
			t.Fatalf("events %d, %d: %+v then %+v, want a state upsert and its notice", i, i+1, st, notice)
		}
		if st.Version != versions[id] || notice.Version != versions[id] {
			t.Fatalf("flight %s: events carry versions %d/%d, want %d", id, st.Version, notice.Version, versions[id])
		}
		doc, err := flight.CanonicalJSON(states[id])
		if err != nil {
			t.Fatal(err)
		}
		if st.Payload != string(doc) {
			t.Fatalf("flight %s: KAFKA_SCHD payload differs from the stored state:\n%s\n%s", id, st.Payload, doc)
		}
	}
	// One outbox row per flight, with its state and its notice (COPY, for
	// a snapshot chunk of snapshotCopyMin flights or more).
	if rows := f.count(`SELECT count(*) FROM msg_event WHERE message_id = $1 AND state IS NOT NULL AND notice IS NOT NULL`, msgID); rows != len(versions) ||
		f.count(`SELECT count(*) FROM msg_event WHERE message_id = $1`, msgID) != rows {
		t.Fatalf("message %d: %d outbox rows with state and notice, want one per flight (%d)", msgID, rows, len(versions))
	}
	var wrongDay int
	if err := f.conn.QueryRow(context.Background(),
		`SELECT count(*) FROM msg_event WHERE message_id = $1 AND operation_day IS DISTINCT FROM $2::date`,
		msgID, nullDay(day)).Scan(&wrongDay); err != nil {
		t.Fatal(err)
	}
	if wrongDay != 0 {
		t.Fatalf("message %d: %d events without operation day %q", msgID, wrongDay, day)
	}
}

func nullDay(day string) *string {
	if day == "" {
		return nil
	}
	return &day
}

// A large window (no operation day) of new flights writes their events
// with a NULL day, through the same bulk path.
func TestLargeWindowEventsHaveNoDay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const n = 1100
	var records []store.SnapshotRecord
	for i := range n {
		r := fullRecord(flight.FLID(800000+i), 1)
		r.Day = ""
		records = append(records, r)
	}
	var out store.SnapshotEffect
	if err := f.inTx(func(tx *store.Tx) error {
		var err error
		out, err = tx.ApplySnapshot(t.Context(), f.nextMeta("SCHD", "DNLD"), store.Snapshot{Records: records})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := f.flights()
	if len(got) != n || len(out.Versions) != n {
		t.Fatalf("%d flights, %d versions, want %d", len(got), len(out.Versions), n)
	}
	checkEvents(t, f, f.msgID, got, out.Versions, "")
}
