package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

type outboxRow struct {
	Status   string
	Attempts int32
	LastErr  *string
}

func (f *fixture) outboxRow(id int64) outboxRow {
	f.t.Helper()
	var r outboxRow
	if err := f.conn.QueryRow(context.Background(), `SELECT status, attempts, last_error FROM msg_event WHERE id = $1`, id).
		Scan(&r.Status, &r.Attempts, &r.LastErr); err != nil {
		f.t.Fatal(err)
	}
	return r
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
// MarkDelivered of the newest supersedes the older state rows in the same
// statement and leaves notices alone.
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

	// An event committed after the read is newer than what is delivered:
	// it must stay PENDING.
	v1b := f.setFLOP(1, "09SEP260930")
	delivered, superseded, err := f.store.MarkDelivered(t.Context(), f.epoch, []int64{state[0].ID, state[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if delivered != 2 || superseded != 4 {
		t.Fatalf("delivered %d superseded %d, want 2 and 4 (flight 1: snapshot + 2 FLOPs, flight 2: snapshot)", delivered, superseded)
	}
	if n := f.count(`SELECT count(*) FROM msg_event WHERE kind = 'KAFKA_SCHD' AND status = 'PENDING'`); n != 1 {
		t.Fatalf("%d state rows pending, want only the FLOP committed after the read", n)
	}
	if n := f.count(`SELECT count(*) FROM msg_event WHERE kind = 'KAFKA_SCHD' AND status = 'PENDING' AND state_version = $1`, v1b); n != 1 {
		t.Fatal("the newer FLOP was superseded")
	}
	if n := f.count(`SELECT count(*) FROM msg_event WHERE kind = 'KAFKA_MSG' AND status = 'PENDING'`); n != 7 {
		t.Fatalf("%d notices pending, want 7", n)
	}
	// Repeating changes nothing.
	if d, s, err := f.store.MarkDelivered(t.Context(), f.epoch, []int64{state[0].ID}); err != nil || d != 0 || s != 0 {
		t.Fatalf("repeat: %d %d %v", d, s, err)
	}
	if n := f.count(`SELECT count(*) FROM msg_event WHERE status <> 'PENDING' AND done_at IS NULL`); n != 0 {
		t.Fatal("finished rows without done_at")
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
	if _, s, err := f.store.MarkDelivered(t.Context(), f.epoch, []int64{state[0].ID}); err != nil || s != 2 {
		t.Fatalf("superseded %d (%v), want the first upsert and the tombstone", s, err)
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
	if err != nil || len(one) != 1 || one[0].Kind != store.KindState || one[0].StateVersion != v {
		t.Fatalf("limit 1: %v %+v, want the newest state at %d", err, one, v)
	}
	two, err := f.store.PendingEvents(t.Context(), 2)
	if err != nil || len(two) != 2 || two[0].Kind != store.KindNotice || two[1].StateVersion != v || two[0].ID > two[1].ID {
		t.Fatalf("limit 2: %v %+v, want the first notice and the newest state", err, two)
	}
	if _, s, err := f.store.MarkDelivered(t.Context(), f.epoch, []int64{two[0].ID, two[1].ID}); err != nil || s != 4 {
		t.Fatalf("superseded %d %v", s, err)
	}
	rest := pendingOf(t, f.store)
	if len(rest) != 4 {
		t.Fatalf("%d left, want the other 4 notices", len(rest))
	}
	for _, e := range rest {
		if e.Kind != store.KindNotice {
			t.Fatalf("left %+v", e)
		}
	}
}

// MarkFailed keeps the row PENDING with one more attempt and its error;
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
	ids := []int64{ev[0].ID, ev[1].ID}
	for range 2 {
		if err := f.store.MarkFailed(t.Context(), f.epoch, ids, []string{"UNKNOWN_TOPIC_OR_PARTITION", "broker down"}); err != nil {
			t.Fatal(err)
		}
	}
	if r := f.outboxRow(ev[0].ID); r.Status != "PENDING" || r.Attempts != 2 || r.LastErr == nil || *r.LastErr != "UNKNOWN_TOPIC_OR_PARTITION" {
		t.Fatalf("%+v", r)
	}
	if r := f.outboxRow(ev[1].ID); r.Attempts != 2 || *r.LastErr != "broker down" {
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
	all := make([]int64, len(ev))
	for i, e := range ev {
		all[i] = e.ID
	}
	if _, _, err := f.store.MarkDelivered(t.Context(), f.epoch, all); err != nil {
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

	ev, err := s.PendingEvents(t.Context(), 1000)
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
	if _, superseded, err := s.MarkDelivered(t.Context(), f.epoch, ids); err != nil || superseded != 20 {
		t.Fatalf("superseded %d %v", superseded, err)
	}
	if _, _, err := s.OutboxStats(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := tr.n.Load(); n != 4 {
		t.Fatalf("%d statements for 4 calls over 60 rows", n)
	}
}

// A dispatcher whose epoch was superseded can neither mark nor supersede:
// MarkDelivered and MarkFailed return ErrFenced and change no row, checked
// against pipeline_lock in the same statement; the new epoch marks.
func TestOutboxMarksAreFenced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.setFLOP(1, "09SEP260900")
	f.setFLOP(1, "09SEP260910")
	ev := pendingOf(t, f.store)
	if len(ev) != 3 {
		t.Fatalf("%d events, want the newest state and two notices", len(ev))
	}
	ids := make([]int64, len(ev))
	for i, e := range ev {
		ids[i] = e.ID
	}
	before := f.count(`SELECT count(*) FROM msg_event WHERE status = 'PENDING'`)
	newer, err := f.store.TakeEpoch(t.Context(), "next-leader")
	if err != nil {
		t.Fatal(err)
	}
	d, s, err := f.store.MarkDelivered(t.Context(), f.epoch, ids)
	if !errors.Is(err, store.ErrFenced) || d != 0 || s != 0 {
		t.Fatalf("MarkDelivered by the old epoch: %d delivered, %d superseded, %v; want ErrFenced", d, s, err)
	}
	if err := f.store.MarkFailed(t.Context(), f.epoch, ids, []string{"a", "b", "c"}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("MarkFailed by the old epoch: %v; want ErrFenced", err)
	}
	for _, id := range ids {
		if r := f.outboxRow(id); r.Status != "PENDING" || r.Attempts != 0 {
			t.Fatalf("row %d changed by a fenced call: %+v", id, r)
		}
	}
	if after := f.count(`SELECT count(*) FROM msg_event WHERE status = 'PENDING'`); after != before {
		t.Fatalf("%d pending rows after fenced calls, %d before", after, before)
	}
	if d, s, err := f.store.MarkDelivered(t.Context(), newer, ids); err != nil || d != 3 || s != 1 {
		t.Fatalf("MarkDelivered by the current epoch: %d delivered, %d superseded, %v; want 3 and 1", d, s, err)
	}
}
