package dispatch_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
)

// batch applies FLOPs as the pump applies a batch of messages: one
// working set, written with one transaction, so each flight's older
// versions are rows of their notice alone and its newest carries the state.
func (e *env) batch(flops ...flight.Commands) {
	e.t.Helper()
	err := e.inTx(func(tx *store.Tx) error {
		var flids []flight.FLID
		for _, f := range flops {
			flids = append(flids, f.FLID)
		}
		set, err := tx.LoadSet(context.Background(), flids, len(flops), nil)
		if err != nil {
			return err
		}
		for _, f := range flops {
			if _, err := set.Increment(e.nextMeta("FLOP", f.Cmds[0].Tag), []flight.Commands{f}); err != nil {
				return err
			}
		}
		return tx.WriteSet(context.Background(), set)
	})
	if err != nil {
		e.t.Fatalf("batch: %v", err)
	}
}

func estt(flid flight.FLID, v string) flight.Commands {
	return flight.Commands{FLID: flid, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: v}}}
}

// Rows of a notice alone (older versions of a batch), of both records and
// of a state alone (a re-delivered state) mix in the outbox: small passes
// (3 records, windows of 2 rows that split the rows' records between
// passes) deliver every notice exactly once and each flight's states in
// rising versions up to its newest, and the cursor passes every row.
func TestMixedRowsDeliverEveryNoticeAndTheNewestStates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{BatchSize: 3})
	e.batch(estt(1, "09SEP260900"), estt(2, "09SEP260900"), estt(1, "09SEP260910"), estt(1, "09SEP260920"))
	e.flop(3, "ESTT", "09SEP260900")
	e.batch(estt(2, "09SEP260910"), estt(3, "09SEP260910"), estt(2, "09SEP260920"))
	// A state alone: flight 3's newest, as `parked --redeliver` inserts it.
	if _, err := e.conn.Exec(t.Context(), `INSERT INTO msg_event (flid, state_version, operation_day, message_id, event, state)
		SELECT flid, state_version, operation_day, message_id, event, state FROM msg_event
		WHERE flid = 3 AND state IS NOT NULL ORDER BY id DESC LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM msg_event WHERE state IS NULL`); n != 3 {
		t.Fatalf("%d rows of a notice alone, want 3 (flight 1 twice, flight 2 once)", n)
	}
	if n := e.count(`SELECT count(*) FROM msg_event WHERE notice IS NULL`); n != 1 {
		t.Fatalf("%d rows of a state alone, want 1", n)
	}
	deliverAll(t, d)

	if !e.noticesOnTopic(t, brokers) {
		t.Fatalf("notices on the topic: %d, want every committed one once (%d)",
			len(dispatchtest.Records(t, brokers, noticeTopic)), e.count(`SELECT count(*) FROM msg_event WHERE notice IS NOT NULL`))
	}
	records := dispatchtest.Records(t, brokers, stateTopic)
	dispatchtest.AssertVersionsRise(t, records)
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
	if at, last := e.count(`SELECT delivered_id FROM msg_event_cursor`), e.count(`SELECT max(id) FROM msg_event`); at != last {
		t.Fatalf("cursor %d, want the last row %d", at, last)
	}
	if st := d.Status(); st.Pending != 0 || st.Parked != 0 {
		t.Fatalf("status %+v", st)
	}
}

// A row's notice and its state are parked apart: the one the broker
// refuses for good is listed with its kind, the other is delivered, and
// the cursor passes both rows. `parked --redeliver` of a row inserts the
// parked record alone.
func TestParkedNoticeAndParkedStateOfRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.NewLimited(t, 20000, 3, stateTopic, noticeTopic)
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), fastRetry, fastClient()...)
	big := `{"X":"` + incompressible(60_000) + `"}`
	var bigNotice, bigState int64
	insert := func(flid int, notice, state string) int64 {
		var id int64
		if err := e.conn.QueryRow(t.Context(), `INSERT INTO msg_event (flid, state_version, message_id, event, state, notice)
			VALUES ($1, nextval('state_version_seq'), 1, 'UPSERT', $2, $3) RETURNING id`, flid, state, notice).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	insert(1, `{"n":1}`, `{"s":1}`)
	bigNotice = insert(2, big, `{"s":2}`)
	bigState = insert(3, `{"n":3}`, big)
	insert(4, `{"n":4}`, `{"s":4}`)
	run(t, d)
	d.Notify()
	idle(t, d)

	parked, err := e.store.ParkedEvents(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		ID          int64
		Kind, Event string
		FLID        flight.FLID
		Bytes       int64
	}
	var got []entry
	for _, p := range parked {
		if !strings.Contains(p.LastError, "MESSAGE_TOO_LARGE") {
			t.Errorf("parked %+v: want MESSAGE_TOO_LARGE", p)
		}
		got = append(got, entry{p.ID, p.Kind, p.Event, p.FLID, p.Bytes})
	}
	want := []entry{{bigNotice, store.KindNotice, store.EventNotice, 2, int64(len(big))}, {bigState, store.KindState, store.EventUpsert, 3, int64(len(big))}}
	if !slices.Equal(want, got) {
		t.Fatalf("parked %+v, want %+v", got, want)
	}
	states := dispatchtest.Latest(dispatchtest.Records(t, brokers, stateTopic))
	notices := dispatchtest.Records(t, brokers, noticeTopic)
	if _, ok := states["2"]; !ok || len(notices) != 3 {
		t.Fatalf("flight 2's state on the topic %v, %d notices: want the state of the row whose notice is parked and the 3 other notices", ok, len(notices))
	}
	if _, ok := states["3"]; ok {
		t.Fatal("flight 3's parked state is on the topic")
	}
	if at := e.count(`SELECT delivered_id FROM msg_event_cursor`); at != e.count(`SELECT max(id) FROM msg_event`) {
		t.Fatalf("cursor %d: want past every row (parked records are done)", at)
	}

	ids, err := e.store.RedeliverParked(t.Context(), []int64{bigNotice})
	if err != nil || !slices.Equal(ids, []int64{bigNotice}) {
		t.Fatalf("redeliver %v %v", ids, err)
	}
	if n := e.count(`SELECT count(*) FROM msg_event WHERE id > $1 AND flid = 2 AND notice IS NOT NULL AND state IS NULL`, bigState); n != 1 {
		t.Fatalf("%d copies of flight 2's notice alone, want 1", n)
	}
	d.Notify()
	idle(t, d) // refused again: parked again
	if n := e.count(`SELECT count(*) FROM msg_event_parked WHERE kind = 'KAFKA_MSG'`); n != 1 {
		t.Fatalf("%d parked notices after the re-delivery was refused again, want 1", n)
	}
}
