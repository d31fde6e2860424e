package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// windowStatements records the window reads a store sends (the statement
// that reads msg_event_cursor and msg_event together) with their
// arguments.
type windowStatements struct {
	mu    sync.Mutex
	sql   string
	args  []any
	calls int
}

func (w *windowStatements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "msg_event_cursor") && strings.Contains(d.SQL, "LIMIT $1") {
		w.mu.Lock()
		w.sql, w.args = d.SQL, d.Args
		w.calls++
		w.mu.Unlock()
	}
	return ctx
}
func (w *windowStatements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// planNode is a node of EXPLAIN (ANALYZE, FORMAT JSON).
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Rows     int64      `json:"Actual Rows"`
	Loops    int64      `json:"Actual Loops"`
	Sort     []string   `json:"Sort Key"`
	Plans    []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

// A window read takes the oldest rows above the cursor in id order and
// stops after its limit, however many rows are pending: no scan of
// msg_event outside the per-flight probes returns more rows than the
// window holds, and nothing sorts the outbox's rows by id. (A "NOT IN"
// filter let the planner scan every pending row and sort them all, with
// their payloads, on each pass: a pass during a snapshot's delivery cost
// the whole backlog.)
func TestOutboxWindowReadStopsAtItsLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &windowStatements{}
	db := storetest.New(t, store.Options{Location: shanghai, Tracer: rec})
	// A full-day snapshot's outbox: one row per flight, each a notice and
	// a state, far more than one window.
	if _, err := db.Conn.Exec(ctx, `
		INSERT INTO msg_event (flid, state_version, message_id, notice, event, state)
		SELECT g, 1, 1, repeat('n', 150), 'UPSERT', repeat('s', 250) FROM generate_series(1, 10000) g`); err != nil {
		t.Fatal(err)
	}
	// A third of it delivered.
	if _, err := db.Conn.Exec(ctx, `UPDATE msg_event_cursor SET delivered_id = (SELECT min(id) + 3500 FROM msg_event)`); err != nil {
		t.Fatal(err)
	}
	const limit = 2000
	w, err := db.Store.ReadWindow(ctx, limit, nil)
	if err != nil || len(w.Events) != 2*limit || !w.Full {
		t.Fatalf("window: %d events, full %v (%v); want %d, full", len(w.Events), w.Full, err, 2*limit)
	}
	for i := 1; i < len(w.Events); i++ {
		a, b := w.Events[i-1], w.Events[i]
		if a.ID > b.ID || (a.ID == b.ID && a.Kind != store.KindState) {
			t.Fatalf("events %d and %d out of order: %d/%s before %d/%s", i-1, i, a.ID, a.Kind, b.ID, b.Kind)
		}
	}
	rec.mu.Lock()
	sql, args := rec.sql, rec.args
	rec.mu.Unlock()
	if sql == "" {
		t.Fatal("the window read was not seen")
	}
	var out []byte
	if err := db.Conn.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&out); err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	plans[0].Plan.walk(func(n planNode) {
		if n.Relation == "msg_event" && n.Loops == 1 && n.Rows > limit {
			t.Errorf("%s on msg_event returned %d rows for a window of %d:\n%s", n.Type, n.Rows, limit, out)
		}
		for _, k := range n.Sort {
			if strings.HasSuffix(k, "msg_event.id") || strings.HasPrefix(k, "p.id") || strings.HasPrefix(k, "w.id") {
				t.Errorf("the server sorts %d rows by id (%s):\n%s", n.Rows, k, out)
			}
		}
	})
}

// A window that holds every row above the cursor (fewer than its limit,
// nothing left out) gives each flight's newest state from its own rows,
// coalesced exactly as the probe beyond the window does; a full window,
// or one that leaves done rows out, probes.
func TestOutboxWindowCoalescesWithinAndBeyond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t, store.Options{Location: shanghai})
	// Flight 1 three times, flight 2 twice, flight 3 once (a notice
	// only on its second row).
	if _, err := db.Conn.Exec(ctx, `
		INSERT INTO msg_event (flid, state_version, message_id, notice, event, state) VALUES
			(1, 1, 1, 'n1', 'UPSERT', 's1v1'), (2, 1, 1, 'n2', 'UPSERT', 's2v1'), (1, 2, 2, 'n1', 'UPSERT', 's1v2'),
			(3, 1, 2, 'n3', 'UPSERT', 's3v1'), (2, 2, 3, NULL, 'DELETE', 's2v2'), (1, 3, 3, 'n1', 'UPSERT', 's1v3')`); err != nil {
		t.Fatal(err)
	}
	states := func(w store.Window) map[int64]string {
		got := map[int64]string{}
		for _, e := range w.Events {
			if e.Kind == store.KindState {
				got[int64(e.FLID)] = string(e.Payload) + "/" + e.Event
			}
		}
		return got
	}
	whole, err := db.Store.ReadWindow(ctx, 100, nil)
	if err != nil || whole.Full || len(whole.Events) != 5+3 {
		t.Fatalf("whole window: %d events, full %v, %v", len(whole.Events), whole.Full, err)
	}
	want := map[int64]string{1: "s1v3/UPSERT", 2: "s2v2/DELETE", 3: "s3v1/UPSERT"}
	if got := states(whole); len(got) != 3 || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("states %v, want %v", got, want)
	}
	for _, e := range whole.Events {
		if e.Kind == store.KindState && e.FLID == 1 && len(e.Covers) != 3 {
			t.Fatalf("flight 1's state covers %v, want its three rows", e.Covers)
		}
	}
	// Two rows: full; the newest states lie beyond the window.
	part, err := db.Store.ReadWindow(ctx, 2, nil)
	if err != nil || !part.Full {
		t.Fatalf("part: full %v, %v", part.Full, err)
	}
	if got := states(part); len(got) != 2 || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("states of a full window %v, want flights 1 and 2 at %v", got, want)
	}
	// Rows left out: the probe, beyond what the window read.
	skip, err := db.Store.ReadWindow(ctx, 100, []int64{whole.Events[len(whole.Events)-1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := states(skip); got[1] != want[1] {
		t.Fatalf("states with the newest row left out %v, want flight 1's newest %s all the same", got, want[1])
	}
}
