package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// gate freezes a dispatcher at a test hook: the first pass that reaches
// it after arm() blocks until release(); frozen is closed when it blocks.
type gate struct {
	mu       sync.Mutex
	armed    bool
	frozen   chan struct{}
	released chan struct{}
	events   []store.OutboxEvent
}

func newGate() *gate { return &gate{frozen: make(chan struct{}), released: make(chan struct{})} }

func (g *gate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = true
}

// hold blocks the calling pass if the gate is armed (once).
func (g *gate) hold(events []store.OutboxEvent) {
	g.mu.Lock()
	if !g.armed {
		g.mu.Unlock()
		return
	}
	g.armed = false
	g.events = events
	g.mu.Unlock()
	close(g.frozen)
	<-g.released
}

func (g *gate) release() {
	select {
	case <-g.released:
	default:
		close(g.released)
	}
}

func (g *gate) waitFrozen(t *testing.T) {
	t.Helper()
	select {
	case <-g.frozen:
	case <-time.After(deadline):
		t.Fatal("the leader never reached the hook")
	}
}

// runDispatcher runs d.Run in the background; the returned channel yields
// Run's result.
func runDispatcher(t *testing.T, d *dispatch.Dispatcher) (context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- d.Run(ctx) }()
	t.Cleanup(cancel)
	return cancel, errc
}

func waitRun(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(deadline):
		t.Fatal("Run did not return")
		return nil
	}
}

// takeOver makes a new leader: a newer fencing epoch for the writes that
// follow and a dispatcher with its own producer of the same feed.
func (e *env) takeOver(brokers []string, extra string) *dispatch.Dispatcher {
	e.t.Helper()
	epoch, err := e.store.TakeEpoch(context.Background(), "leader-b")
	if err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.epoch = epoch
	e.mu.Unlock()
	return e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, extra), dispatch.Options{Epoch: epoch}, fastClient()...)
}

// versionsByKey is the STATE_VERSION sequence of every key, in partition
// order.
func versionsByKey(records []dispatchtest.Record) map[string][]int64 {
	out := map[string][]int64{}
	for _, r := range records {
		out[r.Key] = append(out[r.Key], r.StateVersion())
	}
	return out
}

// The zombie: leader A reads pending events and is frozen before it
// produces them (the hook stands for a GC pause, SIGSTOP or a stalled
// node). Leader B takes over — a newer fencing epoch, its own producer of
// the feed's transactional id — and commits newer versions of the same
// flights. Then A resumes and produces and commits what it read. A
// read_committed consumer sees none of A's records after B's: per FLID the
// versions on KAFKA_SCHD never decrease, the last record per FLID is the
// export, every notice is there exactly once, and A's dispatcher stopped
// for good with reason Fenced. kcat (librdkafka, read_committed) sees the
// same versions.
func TestDeposedLeaderCannotPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := cluster(t, kfake.SeedTopics(3, stateTopic, noticeTopic))
	brokers := c.ListenAddrs()
	const flights = 20
	var recs []store.SnapshotRecord
	for i := range flights {
		recs = append(recs, rec(flight.FLID(100+i), fmt.Sprintf("CA%d", 100+i)))
	}
	e.snapshot(recs...)

	g := newGate()
	a := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), fastRetry, fastClient()...)
	dispatch.SetBeforeProduce(a, func(_ context.Context, events []store.OutboxEvent) { g.hold(events) })
	_, aDone := runDispatcher(t, a)
	idle(t, a)

	// A reads the next versions and freezes before producing them.
	g.arm()
	for i := range flights {
		e.flop(flight.FLID(100+i), "ESTT", "09SEP260900")
	}
	a.Notify()
	g.waitFrozen(t)
	stale := 0
	for _, ev := range g.events {
		if ev.Kind == store.KindState {
			stale++
		}
	}
	if stale != flights {
		t.Fatalf("A froze holding %d state events, want %d", stale, flights)
	}

	// B takes over and publishes newer versions of the same flights.
	b := e.takeOver(brokers, "")
	for i := range flights {
		e.flop(flight.FLID(100+i), "ESTT", "09SEP261000")
	}
	deliverAll(t, b)

	// A resumes: its produce and commit must fail, and it stops.
	g.release()
	err := waitRun(t, aDone)
	if !errors.Is(err, dispatch.ErrFenced) || !errors.Is(err, store.ErrFenced) {
		t.Fatalf("A's Run returned %v, want dispatch.ErrFenced", err)
	}
	st := a.Status()
	if !st.Stopped || st.LastErrorReason != dispatch.ReasonFenced {
		t.Fatalf("A's status %+v, want stopped with reason Fenced", st)
	}
	if n, err := a.DeliverOnce(t.Context()); n != 0 || !errors.Is(err, dispatch.ErrFenced) {
		t.Fatalf("A delivered %d after it stopped (%v)", n, err)
	}
	t.Logf("A stopped: %s", st.LastError)

	state := dispatchtest.Records(t, brokers, stateTopic)
	dispatchtest.AssertVersionsRise(t, state)
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
	for key, vs := range versionsByKey(state) {
		// The snapshot (A, before the freeze), then B's newest; never
		// A's stale version in between or after.
		if len(vs) != 2 {
			t.Errorf("flight %s: versions %v on %s, want the snapshot's and B's", key, vs, stateTopic)
		}
	}
	notices := dispatchtest.Records(t, brokers, noticeTopic)
	seen := map[string]int{}
	for _, n := range notices {
		seen[n.Key+"@"+strconv.FormatInt(n.StateVersion(), 10)]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("notice %s seen %d times", k, n)
		}
	}
	if want := e.count(`SELECT count(*) FROM msg_event_record WHERE kind = 'KAFKA_MSG'`); int64(len(notices)) != want {
		t.Errorf("%d notices on %s, want the %d committed", len(notices), noticeTopic, want)
	}
	if total := int64(len(state) + len(notices)); total != a.Status().Delivered+b.Status().Delivered {
		t.Errorf("%d committed records, but A delivered %d and B %d: a record of neither", total, a.Status().Delivered, b.Status().Delivered)
	}

	// An independent client agrees.
	byKey := map[string][]int64{}
	for _, m := range kcatRead(t, brokers[0], stateTopic) {
		v, _ := m.header(dispatch.HeaderStateVersion)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || m.Key == nil {
			t.Fatalf("kcat message %+v", m)
		}
		byKey[*m.Key] = append(byKey[*m.Key], n)
	}
	for key, vs := range versionsByKey(state) {
		if got := byKey[key]; fmt.Sprint(got) != fmt.Sprint(vs) {
			t.Errorf("flight %s: kcat reads versions %v, franz-go %v", key, got, vs)
		}
	}
	if n := e.count(`SELECT count(*) FROM msg_event_record WHERE ` + pending); n != 0 {
		t.Errorf("%d events pending", n)
	}
}

// With kafka.transactions false (the documented opt-out) the broker does
// not fence the frozen leader: its stale versions reach the topic after its
// successor's — the risk docs/reliability.md and the KafkaReachable condition state.
// The database still fences it: it marks nothing and stops with reason
// Fenced.
func TestWithoutTransactionsADeposedLeaderStillPublishes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := cluster(t, kfake.SeedTopics(3, stateTopic, noticeTopic))
	brokers := c.ListenAddrs()
	const off = "  transactions: false\n"
	e.snapshot(rec(1, "CA1"))
	g := newGate()
	a := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, off), fastRetry, fastClient()...)
	dispatch.SetBeforeProduce(a, func(_ context.Context, events []store.OutboxEvent) { g.hold(events) })
	_, aDone := runDispatcher(t, a)
	idle(t, a)
	g.arm()
	stale := e.flop(1, "ESTT", "09SEP260900")
	a.Notify()
	g.waitFrozen(t)

	b := e.takeOver(brokers, off)
	newer := e.flop(1, "ESTT", "09SEP261000")
	deliverAll(t, b)
	byB, aDelivered := e.count(`SELECT delivered_id FROM msg_event_cursor`), a.Status().Delivered
	g.release()
	if err := waitRun(t, aDone); !errors.Is(err, dispatch.ErrFenced) {
		t.Fatalf("A's Run returned %v, want ErrFenced (its marks are refused)", err)
	}
	if st := a.Status(); !st.Stopped || st.LastErrorReason != dispatch.ReasonFenced || st.Transactional {
		t.Fatalf("A's status %+v", st)
	}
	vs := versionsByKey(dispatchtest.Records(t, brokers, stateTopic))["1"]
	if len(vs) != 3 || vs[1] != newer || vs[2] != stale {
		t.Fatalf("versions of flight 1 on %s: %v; want the snapshot's, B's %d, then A's stale %d", stateTopic, vs, newer, stale)
	}
	// The cursor is where B left it (past the stale state, superseded by
	// B's delivery); A recorded nothing.
	if at := e.count(`SELECT delivered_id FROM msg_event_cursor`); at != byB || at < e.count(`SELECT max(id) FROM msg_event`) {
		t.Fatalf("cursor %d after A stopped, B left it at %d", at, byB)
	}
	if n := e.count(`SELECT count(*) FROM msg_event_parked`); n != 0 || a.Status().Delivered != aDelivered {
		t.Fatalf("A recorded deliveries (%d, %d before) or parked events (%d)", a.Status().Delivered, aDelivered, n)
	}
}

// A crash between the Kafka commit and the cursor's move: the events stay
// pending (above the cursor), and the leader that restarts (a new epoch, a new producer)
// sends them again — the same versions where nothing newer was committed,
// the newest where something was, never an older one than the topic
// holds. The crashed leader, resumed, cannot mark anything.
func TestCrashBetweenCommitAndMarkResendsTheSameVersions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := cluster(t, kfake.SeedTopics(3, stateTopic, noticeTopic))
	brokers := c.ListenAddrs()
	const flights = 10
	var recs []store.SnapshotRecord
	for i := range flights {
		recs = append(recs, rec(flight.FLID(200+i), fmt.Sprintf("MU%d", 200+i)))
	}
	e.snapshot(recs...)

	g := newGate()
	g.arm()
	a := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), fastRetry, fastClient()...)
	dispatch.SetAfterCommit(a, func(context.Context) { g.hold(nil) })
	_, aDone := runDispatcher(t, a)
	g.waitFrozen(t)
	committed := dispatchtest.Records(t, brokers, stateTopic)
	if len(committed) != flights {
		t.Fatalf("%d state records committed before the crash, want %d", len(committed), flights)
	}
	if n := e.count(`SELECT count(*) FROM msg_event_record WHERE ` + pending); n != 2*flights {
		t.Fatalf("%d events pending after the crash, want all %d", n, 2*flights)
	}

	// The restarted leader; meanwhile half of the flights changed.
	b := e.takeOver(brokers, "")
	for i := range flights / 2 {
		e.flop(flight.FLID(200+i), "ESTT", "09SEP260900")
	}
	deliverAll(t, b)

	state := dispatchtest.Records(t, brokers, stateTopic)
	dispatchtest.AssertVersionsRise(t, state)
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
	first := versionsByKey(committed)
	for key, vs := range versionsByKey(state) {
		v0 := first[key][0]
		n, _ := strconv.Atoi(key)
		if n < 200+flights/2 {
			if len(vs) != 2 || vs[0] != v0 || vs[1] <= v0 {
				t.Errorf("changed flight %s: versions %v, want %d then a newer one", key, vs, v0)
			}
			continue
		}
		if len(vs) != 2 || vs[0] != v0 || vs[1] != v0 {
			t.Errorf("unchanged flight %s: versions %v, want %d sent again", key, vs, v0)
		}
	}

	// The crashed leader resumes at its mark: refused, it stops.
	g.release()
	if err := waitRun(t, aDone); !errors.Is(err, dispatch.ErrFenced) {
		t.Fatalf("A's Run returned %v, want ErrFenced", err)
	}
	if n := e.count(`SELECT count(*) FROM msg_event_record WHERE ` + pending); n != 0 {
		t.Errorf("%d events pending", n)
	}
}
