package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

// windowSQL records the dispatcher's window read as the store sends it.
type windowSQL struct {
	mu   sync.Mutex
	sql  string
	args []any
}

func (w *windowSQL) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "w AS MATERIALIZED") {
		w.mu.Lock()
		w.sql, w.args = d.SQL, d.Args
		w.mu.Unlock()
	}
	return ctx
}
func (w *windowSQL) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// planLoops sums, over the nodes of an EXPLAIN (ANALYZE, FORMAT JSON)
// plan, the loops of the scans of relation (of its index when index is
// not empty).
func planLoops(node map[string]any, relation, index string) float64 {
	n := 0.0
	if node["Relation Name"] == relation && (index == "" || node["Index Name"] == index) {
		n += node["Actual Loops"].(float64)
	}
	for _, key := range []string{"Plan", "Plans"} {
		switch v := node[key].(type) {
		case map[string]any:
			n += planLoops(v, relation, index)
		case []any:
			for _, c := range v {
				n += planLoops(c.(map[string]any), relation, index)
			}
		}
	}
	return n
}

// The window read visits each pending row once: the window's rows in one
// range scan of the primary key (their notices come from them), each
// FLID's newest state whole by its FLID, and no processing row
// while the rows carry their received time. It looked up every record's
// row again by primary key and its processing row before.
func TestOutboxWindowReadsEachRowOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rec := &windowSQL{}
	db := storetest.New(t, store.Options{Location: shanghai, Tracer: rec})
	f := &fixture{t: t, store: db.Store, conn: db.Conn, epoch: db.Epoch}
	received := time.Date(2026, 9, 9, 1, 2, 3, 0, time.UTC)
	for msg := range int64(6) {
		var cmds []flight.Commands
		for flid := range flight.FLID(5) {
			cmds = append(cmds, flight.Commands{FLID: 40 + flid, Cmds: []flight.Command{
				{Tag: "ESTT", Op: flight.OpSet, Value: fmt.Sprintf("09SEP2609%02d", msg)}}})
		}
		if err := f.inTx(func(tx *store.Tx) error {
			_, err := storetest.ApplyIncrement(ctx, tx, store.Meta{MessageID: 100 + msg, Type: "FLOP", Styp: "ESTT", ReceivedAt: received}, cmds)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	w := f.window(20) // 20 of the 30 rows: the newest states lie beyond it
	if len(w.Events) != 25 || !w.Full {
		t.Fatalf("%d records (full %v), want 20 notices and 5 states", len(w.Events), w.Full)
	}
	rec.mu.Lock()
	sql, args := rec.sql, rec.args
	rec.mu.Unlock()
	if sql == "" {
		t.Fatal("the window read was not traced")
	}
	var plan []map[string]any
	if err := f.conn.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	root := plan[0]["Plan"].(map[string]any)
	if n := planLoops(root, "msg_event", "msg_event_pkey"); n != 1 {
		t.Errorf("msg_event's primary key scanned %v times, want once (the window)", n)
	}
	if n := planLoops(root, "proc_state", ""); n != 0 {
		t.Errorf("proc_state scanned %v times, want never: every row carries its received time", n)
	}
}
