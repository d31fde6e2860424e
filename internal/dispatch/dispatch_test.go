package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
)

// Ten FLOPs for one flight before the dispatcher runs: one KAFKA_SCHD
// record at the newest version, ten notices in order; the nine older state
// events are superseded, nothing is left pending (the cursor passed every
// row).
func TestCoalescesTenFLOPsIntoOneRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	var versions []int64
	for i := range 10 {
		versions = append(versions, e.flop(4711, "ESTT", fmt.Sprintf("09SEP26%04d", 900+i)))
	}
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{})

	n, err := d.DeliverOnce(t.Context())
	if err != nil || n != 11 {
		t.Fatalf("DeliverOnce = %d, %v; want 11 records (1 state, 10 notices)", n, err)
	}
	state := dispatchtest.Records(t, brokers, stateTopic)
	if len(state) != 1 {
		t.Fatalf("%d state records, want 1", len(state))
	}
	r := state[0]
	newest := versions[len(versions)-1]
	if r.Key != "4711" || r.StateVersion() != newest || r.Headers[dispatch.HeaderStateVersion] != strconv.FormatInt(newest, 10) ||
		r.Headers[dispatch.HeaderEvent] != store.EventUpsert {
		t.Fatalf("record key %s version %d headers %v, want 4711 at %d", r.Key, r.StateVersion(), r.Headers, newest)
	}
	if _, ok := r.Headers[dispatch.HeaderOperationDay]; ok {
		t.Error("operation-day header on a flight whose day is NULL")
	}
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())

	notices := dispatchtest.Records(t, brokers, noticeTopic)
	var got []int64
	for _, n := range notices {
		got = append(got, n.StateVersion())
		if n.Key != "4711" || n.Headers[dispatch.HeaderEvent] != store.EventNotice {
			t.Errorf("notice %+v", n)
		}
	}
	if !slices.Equal(got, versions) {
		t.Fatalf("notice versions %v, want %v", got, versions)
	}
	if want := e.payloads(store.KindNotice); !slices.Equal(values(notices), want) {
		t.Fatalf("notice values differ from the committed payloads:\n%q\n%q", values(notices), want)
	}

	if n := e.count(`SELECT count(*) FROM msg_event_record WHERE ` + pending); n != 0 {
		t.Fatalf("%d events still pending", n)
	}
	// All 10 state rows are done and only the newest was sent: 9 superseded.
	if n := e.count(`SELECT count(*) FROM msg_event_record WHERE kind = 'KAFKA_SCHD' AND NOT (` + pending + `)`); n != 10 || len(state) != 1 {
		t.Fatalf("%d state rows done (%d sent), want 10 (1)", n, len(state))
	}
	st := d.Status()
	if st.Delivered != 11 || st.Superseded != 9 || st.Pending != 0 || st.Failing || st.LastDeliveredAt.IsZero() {
		t.Fatalf("status %+v", st)
	}
}

func values(rs []dispatchtest.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Value)
	}
	return out
}

// FDEL and a full-day snapshot's diff-delete both publish a non-null
// tombstone {"DELETED":true,"FLID":…,"STATE_VERSION":N} with event DELETE;
// the topic then converges to the export without the deleted flights.
func TestTombstonesAfterFDELAndDiffDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{})

	e.snapshot(rec(1, "CA1"), rec(2, "CA2", flight.Command{Tag: "GTDT", Op: flight.OpReplace,
		Items: []flight.Item{{"GTNO": "1", "GATE": "A1"}}}), rec(3, "CA3"))
	deliverAll(t, d)
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())

	tomb1 := e.fdel(1)[1]
	deliverAll(t, d)
	out := e.snapshot(rec(3, "CA3"))
	if !slices.Equal(out.Deleted, []flight.FLID{2}) {
		t.Fatalf("diff-delete %v, want [2]", out.Deleted)
	}
	tomb2 := out.Versions[2]
	deliverAll(t, d)

	records := dispatchtest.Records(t, brokers, stateTopic)
	dispatchtest.AssertVersionsRise(t, records)
	last := map[string]dispatchtest.Record{}
	for _, r := range records {
		last[r.Key] = r
	}
	for flid, v := range map[string]int64{"1": tomb1, "2": tomb2} {
		r := last[flid]
		want := `{"DELETED":true,"FLID":"` + flid + `","STATE_VERSION":` + strconv.FormatInt(v, 10) + `}`
		if string(r.Value) != want || r.Headers[dispatch.HeaderEvent] != store.EventDelete ||
			r.Headers[dispatch.HeaderOperationDay] != day9 || r.Headers[dispatch.HeaderStateVersion] != strconv.FormatInt(v, 10) {
			t.Errorf("last record of %s: %s %v, want %s", flid, r.Value, r.Headers, want)
		}
	}
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
	if got := dispatchtest.Converge(t, brokers, stateTopic); len(got) != 1 || got["3"] == nil {
		t.Fatalf("converged keys %v, want only 3", keys(got))
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Writers commit FLOPs, deletes and re-creates while Run delivers, woken by
// Notify: per FLID the state topic's versions never decrease, and it
// converges to the export; every notice arrives.
func TestVersionsNeverDecreaseWhileWritersRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{BatchSize: 7})
	stop := run(t, d)

	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		flid := flight.FLID(1 + rnd.IntN(12))
		var err error
		if rnd.IntN(6) == 0 {
			_, err = e.tryFdel(flid)
		} else {
			_, err = e.tryFlop(flid, "ESTT", fmt.Sprintf("09SEP26%04d", i))
		}
		if err != nil {
			t.Fatal(err)
		}
		d.Notify()
	}
	idle(t, d)
	stop()

	records := dispatchtest.Records(t, brokers, stateTopic)
	dispatchtest.AssertVersionsRise(t, records)
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
	notices := values(dispatchtest.Records(t, brokers, noticeTopic))
	slices.Sort(notices)
	want := e.payloads(store.KindNotice)
	slices.Sort(want)
	if !slices.Equal(notices, want) {
		t.Fatalf("%d notices on the topic, %d committed", len(notices), len(want))
	}
	if st := d.Status(); st.Failing || st.LastError != "" {
		t.Fatalf("status %+v", st)
	}
}

// Notify wakes Run at once; without it, the periodic scan finds the events
// (the only other wake-up with a fake clock is its ticker).
func TestNotifyAndPeriodicScanWakeRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	fc := testingclock.NewFakeClock(time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC))
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{Clock: fc, ScanInterval: time.Hour})
	run(t, d)

	e.flop(1, "ESTT", "09SEP260900")
	d.Notify()
	idle(t, d)

	e.flop(2, "ESTT", "09SEP260900")
	eventually(t, "periodic scan delivers", func() bool {
		fc.Step(time.Hour)
		ok, err := d.Idle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
}

// One Notify delivers a backlog larger than a pass: a pass whose window
// was full goes again at once, without a new Notify or the periodic scan
// (which never fires here); one that took everything waits for the next.
func TestOneNotifyDeliversMoreThanAPass(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	fc := testingclock.NewFakeClock(time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC))
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{Clock: fc, ScanInterval: time.Hour, BatchSize: 3})
	run(t, d)
	for i := range 7 {
		e.flop(flight.FLID(20+i), "ESTT", "09SEP260900")
	}
	d.Notify()
	idle(t, d)
	// The pass counts what it delivered just after its commit, which Idle
	// may see first: the count catches up without another wake-up (the
	// fake clock never fires the scan) or fails the wait.
	await.EventuallyEvery(t, "delivered 14 events", deadline, 20*time.Millisecond, func() (bool, string) {
		st := d.Status()
		return st.Delivered == 14, fmt.Sprintf("delivered %d of 14 events", st.Delivered)
	})
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
}

// Idle is false while anything is pending, true once all is delivered:
// what `pump --drain` waits for.
func TestIdleTracksPendingEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{BatchSize: 3})
	if ok, err := d.Idle(t.Context()); err != nil || !ok {
		t.Fatalf("empty outbox: idle %v %v", ok, err)
	}
	for i := range 5 {
		e.flop(flight.FLID(10+i), "ESTT", "09SEP260900")
	}
	if ok, err := d.Idle(t.Context()); err != nil || ok {
		t.Fatalf("10 pending: idle %v %v", ok, err)
	}
	if st := d.Status(); st.Pending != 10 {
		t.Fatalf("pending %d", st.Pending)
	}
	n, err := d.DeliverOnce(t.Context())
	if err != nil || n != 3 {
		t.Fatalf("first pass %d %v, want a batch of 3", n, err)
	}
	if ok, _ := d.Idle(t.Context()); ok {
		t.Fatal("idle after a partial pass")
	}
	deliverAll(t, d)
	if st := d.Status(); st.Pending != 0 || st.OldestPendingAge != 0 || st.Delivered != 10 {
		t.Fatalf("status %+v", st)
	}
}

// A client that is not NewClient's (no manual flushing, no idempotence, a
// transactional id that is not the feed's, or one the feed does not want)
// is refused: the ordering and fencing guarantees depend on it. So is a
// dispatcher without a fencing epoch.
func TestNewRefusesForeignClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	feed := e.feed(brokers, stateTopic, noticeTopic, "")
	plain := e.feed(brokers, stateTopic, noticeTopic, "  transactions: false\n")
	txnID, err := feed.TransactionalID()
	if err != nil {
		t.Fatal(err)
	}
	opts := dispatch.Options{Epoch: e.epoch}
	for name, c := range map[string]struct {
		feed *config.Feed
		opts []kgo.Opt
	}{
		"auto flushing":        {feed, []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.TransactionalID(txnID)}},
		"no transactional id":  {feed, []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ManualFlushing()}},
		"another feed's id":    {feed, []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ManualFlushing(), kgo.TransactionalID(txnID + "x")}},
		"id without txns":      {plain, []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ManualFlushing(), kgo.TransactionalID(txnID)}},
		"no idempotence":       {plain, []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ManualFlushing(), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck())}},
		"plain, auto flushing": {plain, []kgo.Opt{kgo.SeedBrokers(brokers...)}},
	} {
		cl, err := kgo.NewClient(c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dispatch.New(e.store, cl, c.feed, opts)
		cl.Close()
		if !errors.Is(err, dispatch.ErrClient) {
			t.Errorf("%s: %v, want ErrClient", name, err)
		}
	}
	// Overriding acks through NewClient's opts is refused too.
	cl, err := dispatch.NewClient(plain, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := dispatch.New(e.store, cl, plain, opts); !errors.Is(err, dispatch.ErrClient) {
		t.Errorf("leader acks: %v, want ErrClient", err)
	}
	// The feed's own client is accepted, but not without an epoch.
	own, err := dispatch.NewClient(feed)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if _, err := dispatch.New(e.store, own, feed, opts); err != nil {
		t.Errorf("the feed's client refused: %v", err)
	}
	if _, err := dispatch.New(e.store, own, feed, dispatch.Options{}); err == nil || !strings.Contains(err.Error(), "epoch") {
		t.Errorf("no epoch: %v", err)
	}
}

// A backlog larger than a pass, whose flights' newest states lie beyond the
// first windows: the first pass that sees a flight sends its newest state;
// later passes, whose windows reach the older rows or the newest row
// itself while the cursor is still below it, send it no more. Each flight
// is on the state topic once, every notice once, and the cursor ends past
// every row.
func TestBacklogSendsEachNewestStateOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	for round := range 5 {
		for f := range 3 {
			e.flop(flight.FLID(1+f), "ESTT", fmt.Sprintf("09SEP26%02d%02d", 10+round, f))
		}
	}
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{BatchSize: 4})
	for pass := 0; ; pass++ {
		if _, err := d.DeliverOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		if ok, err := d.Idle(t.Context()); err != nil || ok {
			break
		}
		if pass > 100 {
			t.Fatal("the backlog does not drain")
		}
	}
	records := dispatchtest.Records(t, brokers, stateTopic)
	if len(records) != 3 {
		t.Fatalf("%d state records, want 3: each flight's newest state once", len(records))
	}
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
	if !e.noticesOnTopic(t, brokers) {
		t.Fatal("the notice topic does not hold every notice exactly once")
	}
	if at, last := e.count(`SELECT delivered_id FROM msg_event_cursor`), e.count(`SELECT max(id) FROM msg_event`); at != last {
		t.Fatalf("cursor %d, want past the last row %d", at, last)
	}
}

// countFigures counts the statements that count the pending outbox
// (Store.OutboxFigures).
type countFigures struct{ n atomic.Int64 }

func (c *countFigures) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "count(*) FROM msg_event_parked") {
		c.n.Add(1)
	}
	return ctx
}
func (c *countFigures) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// While the dispatcher knows events are pending (its last pass's window
// was full), Idle answers false without counting them in the database:
// `pump --drain` asks at every poll, and the count costs as much as the
// backlog is long. Once a pass finds the outbox drained, the database
// answers again, and says true.
func TestIdleAsksTheDatabaseOnlyWhenNothingIsKnownPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	tr := &countFigures{}
	traced, err := store.Open(t.Context(), e.dsn, store.Options{Location: shanghai, Tracer: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traced.Close)
	feed := e.feed(brokers, stateTopic, noticeTopic, "")
	cl, err := dispatch.NewClient(feed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	d, err := dispatch.New(traced, cl, feed, dispatch.Options{Epoch: e.epoch, BatchSize: 3, StatsInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		e.flop(flight.FLID(10+i), "ESTT", "09SEP260900")
	}
	if n, err := d.DeliverOnce(t.Context()); err != nil || n != 3 {
		t.Fatalf("first pass %d %v, want a batch of 3", n, err)
	}
	before := tr.n.Load()
	if ok, err := d.Idle(t.Context()); err != nil || ok {
		t.Fatalf("after a full window: idle %v %v", ok, err)
	}
	if n := tr.n.Load() - before; n != 0 {
		t.Fatalf("Idle counted the outbox %d times after a full window: the dispatcher knew events were pending", n)
	}
	deliverAll(t, d)
	before = tr.n.Load()
	if ok, err := d.Idle(t.Context()); err != nil || !ok {
		t.Fatalf("drained: idle %v %v", ok, err)
	}
	if n := tr.n.Load() - before; n != 1 {
		t.Fatalf("Idle counted the outbox %d times once drained, want once: only the database says idle", n)
	}
}
