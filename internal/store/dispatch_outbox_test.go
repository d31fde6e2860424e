package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

type outboxRow struct {
	// Pending: above the cursor and not parked.
	Pending  bool
	Attempts int32
	LastErr  *string
}

func (f *fixture) outboxRow(id int64) outboxRow {
	f.t.Helper()
	var r outboxRow
	if err := f.conn.QueryRow(context.Background(), `SELECT id > (SELECT delivered_id FROM msg_event_cursor)
			AND (SELECT count(*) FROM msg_event_parked WHERE event_id = id) < (state IS NOT NULL)::int + (notice IS NOT NULL)::int,
			attempts, last_error
		FROM msg_event WHERE id = $1`, id).
		Scan(&r.Pending, &r.Attempts, &r.LastErr); err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) cursor() int64 {
	f.t.Helper()
	at, err := f.store.OutboxCursor(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return at
}

func (f *fixture) window(limit int) store.Window {
	f.t.Helper()
	w, err := f.store.ReadWindow(context.Background(), limit, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

// deliver records the records keys of w as the dispatcher does once the
// broker acknowledged them: the cursor moves over the window's rows whose
// records they cover, up to the first row that is not done. It returns
// the cursor asked for and AdvanceCursor's answer.
func (f *fixture) deliver(epoch int64, w store.Window, keys ...store.RecordKey) (int64, int64, error) {
	done := map[store.RecordKey]struct{}{}
	var acked []store.OutboxEvent
	for _, e := range w.Events {
		if slices.Contains(keys, e.Key()) {
			done[e.Key()] = struct{}{}
			acked = append(acked, e)
		}
	}
	to := w.DoneUpTo(done)
	dropped, err := f.store.AdvanceCursor(context.Background(), epoch, store.Advance{To: to, Delivered: acked})
	return to, dropped, err
}

func keysOf(ev []store.OutboxEvent) []store.RecordKey {
	out := make([]store.RecordKey, len(ev))
	for i, e := range ev {
		out[i] = e.Key()
	}
	return out
}

func idsOf(ev []store.OutboxEvent) []int64 {
	out := make([]int64, len(ev))
	for i, e := range ev {
		out[i] = e.ID
	}
	return out
}

// superseded counts the older rows a state event covers.
func superseded(ev []store.OutboxEvent) int {
	n := 0
	for _, e := range ev {
		if e.Kind == store.KindState {
			n += len(e.Covers)
			if slices.Contains(e.Covers, e.ID) {
				n--
			}
		}
	}
	return n
}

func (f *fixture) setFLOP(flid flight.FLID, estt string) int64 {
	f.t.Helper()
	out, err := f.increment("ESTT", flight.Commands{FLID: flid, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: estt}}})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.Versions[flid]
}

func pendingOf(t *testing.T, s *store.Store) []store.OutboxEvent {
	t.Helper()
	ev, err := s.PendingEvents(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// PendingEvents returns each FLID's full state once, at its newest version
// (a tombstone when the delete is newest), and every notice, in id order;
// the newest covers the older state rows of its flight, so once it is
// delivered the cursor passes them; it stops at the first row not done (a
// notice), and a row committed after the read stays pending.
func TestOutboxCoalescesAndSupersedes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.mustSnapshot(day9, rec(1, "CA1", day9), rec(2, "CA2", day9))
	f.setFLOP(1, "09SEP260900")
	f.setFLOP(1, "09SEP260910")
	v1 := f.setFLOP(1, "09SEP260920")
	del, err := f.fdel(2)
	if err != nil {
		t.Fatal(err)
	}
	v2 := del.Versions[2]

	ev := pendingOf(t, f.store)
	if !slices.IsSortedFunc(ev, func(a, b store.OutboxEvent) int { return int(a.ID - b.ID) }) {
		t.Fatal("pending events are not in id order")
	}
	var state []store.OutboxEvent
	notices := 0
	for _, e := range ev {
		switch e.Kind {
		case store.KindState:
			state = append(state, e)
		case store.KindNotice:
			notices++
			if e.Event != store.EventNotice {
				t.Errorf("notice event %s", e.Event)
			}
		}
	}
	if notices != 6 {
		t.Errorf("%d notices, want 6 (2 snapshot, 3 FLOP, 1 FDEL): none is coalesced", notices)
	}
	if len(state) != 2 || state[0].FLID != 1 || state[0].StateVersion != v1 || state[0].Event != store.EventUpsert ||
		state[1].FLID != 2 || state[1].StateVersion != v2 || state[1].Event != store.EventDelete {
		t.Fatalf("state events %+v, want flight 1 at %d and the tombstone of 2 at %d", state, v1, v2)
	}
	if state[0].OperationDay != day9 || state[0].MessageID != f.msgID-1 {
		t.Errorf("day %q message %d", state[0].OperationDay, state[0].MessageID)
	}
	want := `{"DELETED":true,"FLID":"2","STATE_VERSION":` + itoa(v2) + `}`
	if string(state[1].Payload) != want {
		t.Errorf("tombstone %s, want %s", state[1].Payload, want)
	}
	current := f.flights()[1]
	if doc, _ := flight.CanonicalJSON(current); string(state[0].Payload) != string(doc) {
		t.Errorf("payload is not the committed state:\n%s\n%s", state[0].Payload, doc)
	}

	if n := superseded(ev); n != 4 {
		t.Fatalf("state events cover %d older rows, want 4 (flight 1: snapshot + 2 FLOPs, flight 2: snapshot)", n)
	}
	w := f.window(1000)
	if len(state[0].Covers) != 4 || state[0].Covers[0] != slices.Min(idsOf(w.Events)) {
		t.Fatalf("flight 1's newest state covers %v, want its 4 rows from the first row above the cursor %d", state[0].Covers, w.Cursor)
	}
	// An event committed after the read is newer than what is delivered:
	// it must stay pending.
	v1b := f.setFLOP(1, "09SEP260930")
	// The state events alone: the first row's state (flight 1's snapshot,
	// covered by its newest) is done but not its notice, so the cursor
	// stays; with the notices but the last: it stops below the row of the
	// last notice.
	to, _, err := f.deliver(f.epoch, w, state[0].Key(), state[1].Key())
	if err != nil {
		t.Fatal(err)
	}
	if ev[0].Kind != store.KindNotice || to != w.Cursor || f.cursor() != to {
		t.Fatalf("cursor %d (asked %d), want %d: the first row's notice is not done", f.cursor(), to, w.Cursor)
	}
	var noticeKeys []store.RecordKey
	for _, e := range w.Events {
		if e.Kind == store.KindNotice {
			noticeKeys = append(noticeKeys, e.Key())
		}
	}
	lastNotice := noticeKeys[len(noticeKeys)-1]
	secondLast := noticeKeys[len(noticeKeys)-2]
	to, _, err = f.deliver(f.epoch, w, append([]store.RecordKey{state[0].Key(), state[1].Key()}, noticeKeys[:len(noticeKeys)-1]...)...)
	if err != nil {
		t.Fatal(err)
	}
	if to != secondLast.ID || f.cursor() != to {
		t.Fatalf("cursor %d (asked %d), want %d: below the row of the last notice %d, not done", f.cursor(), to, secondLast.ID, lastNotice.ID)
	}
	// Everything read: the cursor passes the whole window.
	to, _, err = f.deliver(f.epoch, w, keysOf(w.Events)...)
	if err != nil {
		t.Fatal(err)
	}
	last := slices.Max(idsOf(w.Events))
	if to != last || f.cursor() != last {
		t.Fatalf("cursor %d (asked %d), want the window's last row %d", f.cursor(), to, last)
	}
	rest := pendingOf(t, f.store)
	if len(rest) != 2 || rest[0].Kind != store.KindState || rest[0].StateVersion != v1b || rest[1].Kind != store.KindNotice {
		t.Fatalf("pending %+v, want only the FLOP committed after the read (state at %d and notice)", rest, v1b)
	}
	if n := f.count(`SELECT count(*) FROM msg_event WHERE id > $1`, last); n != 1 {
		t.Fatalf("%d rows above the cursor, want 1 (one row per message effect)", n)
	}
	// The cursor never moves down; repeating changes nothing.
	if _, _, err := f.deliver(f.epoch, w, state[0].Key()); err != nil || f.cursor() != last {
		t.Fatalf("repeat: cursor %d %v", f.cursor(), err)
	}
}

// A tombstone followed by a re-create coalesces to the re-created state.
func TestOutboxCoalescesAcrossDeleteAndRecreate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.setFLOP(5, "09SEP260900")
	if _, err := f.fdel(5); err != nil {
		t.Fatal(err)
	}
	v := f.setFLOP(5, "09SEP261000")
	var state []store.OutboxEvent
	for _, e := range pendingOf(t, f.store) {
		if e.Kind == store.KindState {
			state = append(state, e)
		}
	}
	if len(state) != 1 || state[0].StateVersion != v || state[0].Event != store.EventUpsert || state[0].OperationDay != "" {
		t.Fatalf("%+v, want one upsert at %d with no day", state, v)
	}
	if n := superseded(state); n != 2 {
		t.Fatalf("covers %d older rows, want the first upsert and the tombstone", n)
	}
	w := f.window(1000)
	if _, _, err := f.deliver(f.epoch, w, keysOf(w.Events)...); err != nil {
		t.Fatal(err)
	}
	if rest := pendingOf(t, f.store); len(rest) != 0 {
		t.Fatalf("pending after delivery: %+v", rest)
	}
}

// The window of oldest rows bounds a read; a state row in it brings its
// FLID's newest state even from beyond the window, so a read is never empty
// while something is pending and a backlog always moves.
func TestOutboxWindowReachesTheNewestState(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var v int64
	for i := range 5 {
		v = f.setFLOP(1, "09SEP26090"+itoa(int64(i)))
	}
	one, err := f.store.PendingEvents(t.Context(), 1)
	if err != nil || len(one) != 2 || one[0].Kind != store.KindNotice || one[1].Kind != store.KindState ||
		one[1].StateVersion != v || one[0].ID > one[1].ID {
		t.Fatalf("limit 1: %v %+v, want the first row's notice and the newest state at %d", err, one, v)
	}
	two, err := f.store.PendingEvents(t.Context(), 2)
	if err != nil || len(two) != 3 || two[0].Kind != store.KindNotice || two[1].Kind != store.KindNotice ||
		two[2].StateVersion != v || two[1].ID > two[2].ID {
		t.Fatalf("limit 2: %v %+v, want the first two notices and the newest state", err, two)
	}
	w := f.window(1)
	if to, _, err := f.deliver(f.epoch, w, keysOf(w.Events)...); err != nil || to != one[0].ID {
		t.Fatalf("cursor %d %v, want past the window's row %d", to, err, one[0].ID)
	}
	// The rows above the cursor: the other 4 notices, and no state older
	// than the one delivered (the dispatcher skips the newest it already
	// delivered; a new leader would send it again at its version).
	rest := pendingOf(t, f.store)
	notices := 0
	for _, e := range rest {
		switch {
		case e.Kind == store.KindNotice:
			notices++
		case e.StateVersion != v:
			t.Fatalf("left %+v: an older state than the one delivered", e)
		}
	}
	if notices != 4 || len(rest) != 5 {
		t.Fatalf("left %+v, want the other 4 notices and the newest state", rest)
	}
}

// MarkFailed keeps the row pending with one more attempt and its error;
// OutboxStats counts pending rows and finds the oldest.
func TestOutboxFailedAndStats(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pending, oldest, err := f.store.OutboxStats(t.Context())
	if err != nil || pending != 0 || !oldest.IsZero() {
		t.Fatalf("empty outbox: %d %v %v", pending, oldest, err)
	}
	f.setFLOP(7, "09SEP260900")
	f.setFLOP(8, "09SEP260900")
	ev := pendingOf(t, f.store)
	if len(ev) != 4 {
		t.Fatalf("%d events", len(ev))
	}
	// Two rows (a row's notice and state share its attempts).
	ids := []int64{ev[0].ID, ev[2].ID}
	if ev[0].ID == ev[2].ID {
		t.Fatalf("events %+v, want two rows of two records", ev)
	}
	for range 2 {
		if err := f.store.MarkFailed(t.Context(), f.epoch, ids, []string{"UNKNOWN_TOPIC_OR_PARTITION", "broker down"}); err != nil {
			t.Fatal(err)
		}
	}
	if r := f.outboxRow(ev[0].ID); !r.Pending || r.Attempts != 2 || r.LastErr == nil || *r.LastErr != "UNKNOWN_TOPIC_OR_PARTITION" {
		t.Fatalf("%+v", r)
	}
	if r := f.outboxRow(ev[2].ID); r.Attempts != 2 || *r.LastErr != "broker down" {
		t.Fatalf("%+v", r)
	}
	if err := f.store.MarkFailed(t.Context(), f.epoch, ids, nil); err == nil {
		t.Fatal("mismatched errors accepted")
	}
	if again := pendingOf(t, f.store); len(again) != 4 || again[0].Attempts != 2 {
		t.Fatalf("failed events are no longer pending: %+v", again)
	}

	pending, oldest, err = f.store.OutboxStats(t.Context())
	if err != nil || pending != 4 {
		t.Fatalf("pending %d %v", pending, err)
	}
	if !oldest.Equal(ev[0].CreatedAt) {
		t.Fatalf("oldest %v, want %v", oldest, ev[0].CreatedAt)
	}
	if _, _, err := f.deliver(f.epoch, f.window(1000), keysOf(ev)...); err != nil {
		t.Fatal(err)
	}
	if pending, oldest, err = f.store.OutboxStats(t.Context()); err != nil || pending != 0 || !oldest.IsZero() {
		t.Fatalf("after delivery: %d %v %v", pending, oldest, err)
	}
}

// Each outbox call is one statement, whatever the number of rows.
func TestOutboxCallsAreOneRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 20 {
		f.setFLOP(flight.FLID(100+i), "09SEP260900")
		f.setFLOP(flight.FLID(100+i), "09SEP261000")
	}
	tr := &roundTrips{} // roundtrip_test.go
	s, err := store.Open(t.Context(), f.conn.Config().ConnString(), store.Options{Tracer: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tr.n.Store(0)

	w, err := s.ReadWindow(t.Context(), 1000, nil)
	ev := w.Events
	if err != nil || len(ev) != 60 {
		t.Fatalf("%d events (%v), want 20 states and 40 notices", len(ev), err)
	}
	ids := make([]int64, len(ev))
	errs := make([]string, len(ev))
	for i, e := range ev {
		ids[i], errs[i] = e.ID, "x"
	}
	if err := s.MarkFailed(t.Context(), f.epoch, ids, errs); err != nil {
		t.Fatal(err)
	}
	if superseded(ev) != 20 {
		t.Fatalf("covers %d older rows, want 20", superseded(ev))
	}
	done := map[store.RecordKey]struct{}{}
	for _, e := range ev {
		done[e.Key()] = struct{}{}
	}
	if _, err := s.AdvanceCursor(t.Context(), f.epoch, store.Advance{To: w.DoneUpTo(done), Delivered: ev,
		Parked: []store.Park{{ID: ev[0].ID, Kind: ev[0].Kind, Error: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.OutboxStats(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := tr.n.Load(); n != 4 {
		t.Fatalf("%d statements for 4 calls over 60 rows", n)
	}
}

// A dispatcher whose epoch was superseded can neither move the cursor nor
// park, nor count failures: AdvanceCursor and MarkFailed return ErrFenced
// and change nothing, checked against pipeline_lock in the same statement;
// the new epoch moves the cursor.
func TestOutboxMarksAreFenced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.setFLOP(1, "09SEP260900")
	f.setFLOP(1, "09SEP260910")
	w := f.window(1000)
	ev := w.Events
	if len(ev) != 3 {
		t.Fatalf("%d events, want the newest state and two notices", len(ev))
	}
	ids := idsOf(ev)
	before, cursor := f.count(`SELECT count(*) FROM msg_event WHERE id > (SELECT delivered_id FROM msg_event_cursor)`), f.cursor()
	newer, err := f.store.TakeEpoch(t.Context(), "next-leader")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.deliver(f.epoch, w, keysOf(ev)...); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("AdvanceCursor by the old epoch: %v; want ErrFenced", err)
	}
	if _, err := f.store.AdvanceCursor(t.Context(), f.epoch, store.Advance{Parked: []store.Park{{ID: ids[0], Kind: ev[0].Kind, Error: "too large"}}}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("park by the old epoch: %v; want ErrFenced", err)
	}
	if err := f.store.MarkFailed(t.Context(), f.epoch, ids, []string{"a", "b", "c"}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("MarkFailed by the old epoch: %v; want ErrFenced", err)
	}
	for _, id := range ids {
		if r := f.outboxRow(id); !r.Pending || r.Attempts != 0 {
			t.Fatalf("row %d changed by a fenced call: %+v", id, r)
		}
	}
	if f.cursor() != cursor || f.count(`SELECT count(*) FROM msg_event_parked`) != 0 {
		t.Fatalf("cursor %d (was %d) or parked rows after fenced calls", f.cursor(), cursor)
	}
	if after := f.count(`SELECT count(*) FROM msg_event WHERE id > (SELECT delivered_id FROM msg_event_cursor)`); after != before {
		t.Fatalf("%d pending rows after fenced calls, %d before", after, before)
	}
	if to, _, err := f.deliver(newer, w, keysOf(ev)...); err != nil || f.cursor() != to || to != slices.Max(ids) {
		t.Fatalf("AdvanceCursor by the current epoch: cursor %d (asked %d) %v; want past the window", f.cursor(), to, err)
	}
	if rest := pendingOf(t, f.store); len(rest) != 0 {
		t.Fatalf("pending after delivery: %+v", rest)
	}
}

// A parked event is listed from msg_event_parked with its error and
// attempts; RedeliverParked inserts it again as a new row above the cursor
// (same flight, version and payload) and removes the entry. It holds the
// pipeline_lock row like a pump's transaction, so it waits for one in
// progress and its row's id is above that transaction's: outbox ids commit
// in order, which the cursor relies on.
func TestRedeliverParkedInsertsANewRowInCommitOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	v := f.setFLOP(1, "09SEP260900")
	w := f.window(1000)
	if len(w.Events) != 2 || w.Events[0].Kind != store.KindState || w.Events[1].ID != w.Events[0].ID {
		t.Fatalf("events %+v, want one row's state and notice", w.Events)
	}
	st := w.Events[0]
	if _, err := f.store.AdvanceCursor(ctx, f.epoch, store.Advance{To: w.Events[1].ID,
		Parked: []store.Park{{ID: st.ID, Kind: st.Kind, Error: "MESSAGE_TOO_LARGE"}}, Delivered: w.Events[1:]}); err != nil {
		t.Fatal(err)
	}
	parked, err := f.store.ParkedEvents(ctx, 0)
	if err != nil || len(parked) != 1 || parked[0].ID != st.ID || parked[0].Kind != store.KindState || parked[0].Event != store.EventUpsert ||
		parked[0].StateVersion != v || parked[0].Attempts != 1 ||
		parked[0].LastError != "MESSAGE_TOO_LARGE" || parked[0].Bytes != int64(len(st.Payload)) || parked[0].ParkedAt.IsZero() {
		t.Fatalf("parked %+v %v", parked, err)
	}
	if n, err := f.store.ParkedCount(ctx); err != nil || n != 1 {
		t.Fatalf("parked count %d %v", n, err)
	}
	if pending, parkedN, _, err := f.store.OutboxFigures(ctx); err != nil || pending != 0 || parkedN != 1 {
		t.Fatalf("figures: pending %d parked %d %v", pending, parkedN, err)
	}

	// A writer holds the pipeline row and inserts a row, uncommitted.
	writer, err := pgx.Connect(ctx, f.conn.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = writer.Close(context.Background()) }()
	wtx, err := writer.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var writerRow int64
	if _, err := wtx.Exec(ctx, `SELECT 1 FROM pipeline_lock WHERE name = $1 FOR UPDATE`, store.LockName); err != nil {
		t.Fatal(err)
	}
	if err := wtx.QueryRow(ctx, `INSERT INTO msg_event (flid, state_version, message_id, notice)
		VALUES (2, 1, 99, '{}') RETURNING id`).Scan(&writerRow); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ids []int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		ids, err := f.store.RedeliverParked(context.Background(), nil)
		done <- result{ids, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for f.count(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%pipeline_lock%'`) == 0 {
		select {
		case r := <-done:
			t.Fatalf("RedeliverParked did not wait for the writer's transaction: %+v", r)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("RedeliverParked is not waiting for the pipeline row")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := wtx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !slices.Equal(r.ids, []int64{st.ID}) {
		t.Fatalf("redelivered %v %v", r.ids, r.err)
	}
	if n, _ := f.store.ParkedCount(ctx); n != 0 {
		t.Fatalf("%d still parked", n)
	}
	again := pendingOf(t, f.store)
	var copyEv *store.OutboxEvent
	for i := range again {
		if again[i].Kind == store.KindState {
			copyEv = &again[i]
		}
	}
	if copyEv == nil || copyEv.ID <= writerRow || copyEv.FLID != 1 || copyEv.StateVersion != v ||
		string(copyEv.Payload) != string(st.Payload) || copyEv.Attempts != 1 {
		t.Fatalf("re-inserted %+v, want flight 1 at %d above the writer's row %d", copyEv, v, writerRow)
	}
	// The copy carries the parked record alone: its notice was delivered.
	for _, e := range again {
		if e.ID == copyEv.ID && e.Kind == store.KindNotice {
			t.Fatalf("re-inserted the delivered notice too: %+v", e)
		}
	}
}

// Retention deletes the done rows (at or below the cursor) older than the
// cutoff in one statement, and keeps the parked ones and everything above
// the cursor.
func TestPruneDropsDoneOutboxRowsBelowTheCursor(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	f.setFLOP(1, "09SEP260900")
	f.setFLOP(2, "09SEP260900")
	w := f.window(1000)
	if len(w.Events) != 4 {
		t.Fatalf("events %+v", w.Events)
	}
	// Flight 1's state parked, the rest delivered; then a new row above.
	if _, err := f.store.AdvanceCursor(ctx, f.epoch, store.Advance{To: slices.Max(idsOf(w.Events)),
		Parked: []store.Park{{ID: w.Events[0].ID, Kind: w.Events[0].Kind, Error: "x"}}, Delivered: w.Events[1:]}); err != nil {
		t.Fatal(err)
	}
	f.setFLOP(3, "09SEP260900")
	n, err := f.store.Prune(ctx, time.Time{}, time.Time{}, time.Now().Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("pruned %d %v, want the delivered row (flight 2's)", n, err)
	}
	left, err := pgx.CollectRows(must(f.conn.Query(ctx, `SELECT id FROM msg_event ORDER BY id`)), pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 || left[0] != w.Events[0].ID || left[1] <= f.cursor() {
		t.Fatalf("left %v (cursor %d), want the parked row and the row above the cursor", left, f.cursor())
	}
}
