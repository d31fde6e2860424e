package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// Every way the pump writes outbox rows — a message's statements (arrays),
// a batch's COPY and a large snapshot's COPY — writes the message's
// received time with each row, and the window reports it from the row:
// none of these messages has a processing row (proc_state), where the
// window looked it up before migration 00027. A row without it (written
// by an older release) still reports its processing row's, and a parked
// record re-delivered keeps its row's. Not parallel: it moves the
// package's COPY threshold.
func TestOutboxWindowReportsTheReceivedTimeWrittenWithTheRow(t *testing.T) {
	ctx := t.Context()
	restore := store.SetCopyRowsMin(4)
	defer restore()
	f := newFixture(t)
	at := func(minute int) time.Time { return time.Date(2026, 9, 9, 1, minute, 3, 456789000, time.UTC) }

	// A large snapshot (its events by COPY, copyEventsMin), message 1.
	var records []store.SnapshotRecord
	for i := range 1000 {
		records = append(records, rec(flight.FLID(10000+i), fmt.Sprintf("CA%d", i), day9))
	}
	if _, err := f.snapshotAs(store.Meta{MessageID: 1, Type: "SCHD", Styp: "RESP", ReceivedAt: at(1)}, day9, records...); err != nil {
		t.Fatal(err)
	}
	// One message's statements (its events as arrays), message 2.
	if err := f.inTx(func(tx *store.Tx) error {
		_, err := storetest.ApplyIncrement(ctx, tx, store.Meta{MessageID: 2, Type: "FLOP", Styp: "ESTT", ReceivedAt: at(2)},
			[]flight.Commands{{FLID: 1, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP260900"}}}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// A batch's events by COPY (copyRowsMin), message 3.
	batch := make([]flight.Commands, 4)
	for i := range batch {
		batch[i] = flight.Commands{FLID: flight.FLID(20 + i), Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261000"}}}
	}
	if err := f.inTx(func(tx *store.Tx) error {
		set, err := tx.LoadSet(ctx, flids(batch), len(batch), nil)
		if err != nil {
			return err
		}
		if _, err := set.Increment(store.Meta{MessageID: 3, Type: "FLOP", Styp: "ESTT", ReceivedAt: at(3)}, batch); err != nil {
			return err
		}
		return tx.FinishBatch(ctx, nil, set, nil)
	}); err != nil {
		t.Fatal(err)
	}
	// A row of an older release (no received_at), message 4, whose
	// processing row says when it was received.
	exec(t, f.conn, `INSERT INTO proc_state (message_id, status, received_at) VALUES (4, 'PENDING', $1)`, at(4))
	exec(t, f.conn, `INSERT INTO msg_event (flid, state_version, message_id, notice) VALUES (30, 1, 4, '{}')`)

	if n := f.count(`SELECT count(*) FROM proc_state WHERE message_id <> 4`); n != 0 {
		t.Fatalf("%d processing rows: the window would find the times there", n)
	}
	want := map[int64]time.Time{1: at(1), 2: at(2), 3: at(3), 4: at(4)}
	w := f.window(5000)
	seen := map[int64]int{}
	for _, e := range w.Events {
		seen[e.MessageID]++
		if !e.ReceivedAt.Equal(want[e.MessageID]) {
			t.Fatalf("record %+v of message %d: received %v, want %v", e.Key(), e.MessageID, e.ReceivedAt, want[e.MessageID])
		}
	}
	if seen[1] != 2000 || seen[2] != 2 || seen[3] != 8 || seen[4] != 1 {
		t.Fatalf("records per message %v, want 2000, 2, 8 and 1", seen)
	}

	// A parked state re-delivered: the copy keeps its row's received time.
	var st store.OutboxEvent
	for _, e := range w.Events {
		if e.MessageID == 2 && e.Kind == store.KindState {
			st = e
		}
	}
	if _, err := f.store.AdvanceCursor(ctx, f.epoch, store.Advance{To: w.Events[len(w.Events)-1].ID,
		Parked: []store.Park{{ID: st.ID, Kind: st.Kind, Error: "MESSAGE_TOO_LARGE"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.RedeliverParked(ctx, nil); err != nil {
		t.Fatal(err)
	}
	again := f.window(10)
	if len(again.Events) != 1 || again.Events[0].ID <= st.ID || again.Events[0].Kind != store.KindState ||
		!again.Events[0].ReceivedAt.Equal(at(2)) {
		t.Fatalf("re-delivered %+v, want message 2's state received at %v", again.Events, at(2))
	}
}
