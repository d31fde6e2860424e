package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// TestSteadyStreamIsNotReplanned runs a steady stream's work — one
// message at a time: its flight loaded and written, the outbox window
// read, the cursor advanced over the delivered state, sometimes with a
// parked notice — a dozen times on the store's only session, and fails
// when pg_prepared_statements says a statement was given a custom plan:
// planned again for its parameters instead of running the plan the
// session keeps. At batches of one, that planning was a third of the
// backend's CPU per message (several statements, the cursor's among
// them, were planned at every call, their generic cost never falling
// below the custom one). A read-only store keeps the server's default.
func TestSteadyStreamIsNotReplanned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t, store.Options{Location: shanghai, MaxConns: 1})
	f := &fixture{t: t, store: db.Store, conn: db.Conn, epoch: db.Epoch}
	const n = 12
	var records []store.SnapshotRecord
	for i := range n {
		records = append(records, storetest.FullRecord(flight.FLID(5000+i), day9, i, "A1", false))
	}
	f.mustSnapshot(day9, records...)
	w := f.window(1000)
	if _, _, err := f.deliver(f.epoch, w, keysOf(w.Events)...); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		// A gate list one item shorter: the update in place and the
		// surplus delete of a replaced collection.
		if _, err := f.increment("GTDT", flight.Commands{FLID: flight.FLID(5000 + i), Cmds: []flight.Command{
			{Tag: "ESTT", Op: flight.OpSet, Value: fmt.Sprintf("09SEP26%02d00", i)},
			{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"GTNO": "1", "GATE": "B2"}}}}}); err != nil {
			t.Fatal(err)
		}
		w := f.window(1000)
		adv := store.Advance{To: w.DoneUpTo(nil)}
		done := map[store.RecordKey]struct{}{}
		for _, e := range w.Events {
			if e.Kind == store.KindNotice && i%2 == 1 {
				adv.Parked = append(adv.Parked, store.Park{ID: e.ID, Kind: e.Kind, Error: "refused"})
			} else {
				adv.Delivered = append(adv.Delivered, e)
			}
			done[e.Key()] = struct{}{}
		}
		adv.To = w.DoneUpTo(done)
		if _, err := f.store.AdvanceCursor(ctx, f.epoch, adv); err != nil {
			t.Fatal(err)
		}
		if f.cursor() != w.Events[len(w.Events)-1].ID {
			t.Fatalf("message %d: the cursor is at %d, not past the window %v", i, f.cursor(), idsOf(w.Events))
		}
	}
	plans, err := f.store.PreparedPlans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The statements of the stream the test must see run: the flight's
	// load and write, the window read (a small window's short statement),
	// both forms of the cursor's advance.
	want := map[string]int64{"FROM flight_schd WHERE flid IN": 0, "UPDATE flight_schd AS f": 0,
		"DELETE FROM flight_gate AS c USING unnest": 0, "FROM msg_event_cursor c LEFT JOIN LATERAL": 0,
		"INSERT INTO msg_event_parked": 0, "WITH fence AS MATERIALIZED": 0}
	for _, p := range plans {
		sql := strings.Join(strings.Fields(p.SQL), " ")
		for k := range want {
			if strings.Contains(sql, k) {
				want[k] += p.Generic + p.Custom
			}
		}
		if p.Custom > 0 {
			t.Errorf("planned again for its parameters %d times (generic plan %d times): %.160s", p.Custom, p.Generic, sql)
		}
	}
	for k, runs := range want {
		if runs < n/2 {
			t.Errorf("%q ran %d times on the store's session, want at least %d: the test no longer exercises it", k, runs, n/2)
		}
	}

	reader, err := store.Open(ctx, db.DSN, store.Options{ReadOnly: true, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if mode, err := reader.Setting(ctx, "plan_cache_mode"); err != nil || mode != "auto" {
		t.Errorf("a read-only store's plan_cache_mode = %q (%v), want the default auto", mode, err)
	}
}
