package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// sample is one look at who may write a feed: the Lease holder, the
// writer in pipeline_lock, and per manager process its
// flightfeed_pump_running (-1: no answer) and its sessions on the feed's
// database.
type sample struct {
	at       time.Time
	lease    string
	holder   string
	epoch    int64
	running  map[string]float64
	sessions map[string]int
}

func (s sample) String() string {
	return fmt.Sprintf("%s Lease=%q pipeline_lock=%q@%d pump_running=%v sessions=%v",
		s.at.Format("15:04:05.000"), s.lease, s.holder, s.epoch, s.running, s.sessions)
}

// monitor samples a feed every 100 ms in the background.
type monitor struct {
	mu      sync.Mutex
	samples []sample
	errs    []string
	stop    chan struct{}
	done    chan struct{}
}

func (e *env) watch(key types.NamespacedName, w *feedWorld, managers ...*manager) *monitor {
	m := &monitor{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			s, err := e.sample(key, w, managers)
			m.mu.Lock()
			if err != nil {
				m.errs = append(m.errs, err.Error())
			} else {
				m.samples = append(m.samples, s)
			}
			m.mu.Unlock()
			select {
			case <-m.stop:
				return
			case <-tick.C:
			}
		}
	}()
	e.t.Cleanup(func() { m.halt() })
	return m
}

func (e *env) sample(key types.NamespacedName, w *feedWorld, managers []*manager) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s := sample{at: time.Now(), running: map[string]float64{}, sessions: map[string]int{}}
	var err error
	if s.lease, err = e.leaseHolder(ctx, key); err != nil {
		return s, err
	}
	if s.holder, s.epoch, err = w.Lock(ctx); err != nil {
		return s, err
	}
	for _, m := range managers {
		var n int
		if err := w.Pool.QueryRow(ctx, `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
			m.id).Scan(&n); err != nil {
			return s, err
		}
		s.sessions[m.id] = n
		s.running[m.id] = m.pumpRunning(key)
	}
	return s, nil
}

// halt stops sampling and returns the samples.
func (m *monitor) halt() []sample {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]sample(nil), m.samples...)
}

// otherOf is the identity of the two that is not id.
func otherOf(id string) string {
	if id == "manager-a" {
		return "manager-b"
	}
	return "manager-a"
}

func startTwo(e *env, lt leaseTimings) map[string]*manager {
	return map[string]*manager{"manager-a": e.startPump("manager-a", "pek", lt), "manager-b": e.startPump("manager-b", "pek", lt)}
}

// TestTwoPumpPodsOnePumpPerFeed runs two `flightfeed pump --feed` processes on
// one FlightFeed. Exactly one pump runs — the Lease holder's, which is also
// the writer in pipeline_lock, while the other replica holds no epoch, runs
// no pump and has no session on the feed's database. The holder is killed
// (SIGKILL) in the middle of a stream of mailbox rows; the other replica
// takes the Lease and a newer epoch and
// finishes the stream (how soon is logged, a figure rather than an
// assertion). The result — the export, the ledger, the mailbox
// results and the KAFKA_SCHD topic — equals an uninterrupted run's on
// separate databases with the same rows; both topics, read read_committed,
// never go back in a FLID's versions (see assertTopics).
func TestTwoPumpPodsOnePumpPerFeed(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: kills a manager and waits out its Lease")
	}
	e := newEnv(t)
	w := newWorld(t, "pek")
	managers := startTwo(e, fastLease)
	key := e.apply(w)

	holder, epoch1 := e.waitLeader(key, w)
	other := otherOf(holder)
	e.waitReady(key, holder)
	day := w.waitRequest()
	mon := e.watch(key, w, managers["manager-a"], managers["manager-b"])

	// A steady stretch longer than a lease: a replica that wrongly took an
	// unexpired Lease or an epoch would do it here. Checked on the samples
	// below.
	time.Sleep(fastLease.duration + 2*fastLease.retry)

	// The stream: rows arrive one every 10 ms; the holder is killed once a
	// third of them carry their result, while the rest are still arriving.
	rows := workload(day, w.loc)
	base := time.Now().UTC().Truncate(time.Second)
	f := w.startFeeder(rows, base, 0, len(rows), 10*time.Millisecond)
	await.Eventually(t, "a third of the stream processed", waitLong, func() (bool, string) {
		n := w.Processed()
		return n >= len(rows)/3, fmt.Sprintf("%d of %d", n, len(rows))
	})
	killedAt := time.Now()
	managers[holder].Kill()
	atKill, insertedAtKill := w.Processed(), f.count()
	if atKill >= len(rows) || insertedAtKill >= len(rows) {
		t.Fatalf("the stream was over before the kill (%d processed, %d inserted of %d): the test proves too little", atKill, insertedAtKill, len(rows))
	}

	// How long the takeover takes is a figure (logged below), not an
	// assertion: the wait is for the event, waitLong only ends a test that
	// is stuck.
	var epoch2 int64
	await.Eventually(t, other+" to take the Lease and a newer epoch", waitLong, func() (bool, string) {
		lh, err := e.leaseHolder(t.Context(), key)
		if err != nil {
			return false, err.Error()
		}
		ph, ep, err := w.Lock(t.Context())
		if err != nil {
			return false, err.Error()
		}
		epoch2 = ep
		return lh == other && ph == other && ep > epoch1, fmt.Sprintf("Lease %q, pipeline_lock %q@%d", lh, ph, ep)
	})
	t.Logf("takeover: %s after SIGKILL of the leader (lease duration %s)", time.Since(killedAt).Round(100*time.Millisecond), fastLease.duration)
	f.wait(t)
	w.waitDrained(len(rows))
	e.waitReady(key, other)
	samples := mon.halt()

	// The timeline: one writer at a time, the Lease holder.
	var before, after int
	holderRan := false
	for _, s := range samples {
		n := 0
		for _, v := range s.running {
			if v == 1 {
				n++
			}
		}
		if n > 1 {
			t.Errorf("two pumps running: %s", s)
		}
		switch {
		case s.at.Before(killedAt):
			before++
			if s.lease != holder || s.holder != holder || s.epoch != epoch1 || s.running[other] == 1 || s.sessions[other] != 0 {
				t.Errorf("while %s lived: %s", holder, s)
			}
			holderRan = holderRan || s.running[holder] == 1
		case s.holder == other:
			after++
			if s.lease != other || s.epoch != epoch2 {
				t.Errorf("after the takeover: %s", s)
			}
		case s.holder != holder || s.epoch != epoch1:
			t.Errorf("between the kill and the takeover: %s", s)
		}
	}
	if before < 20 || after == 0 || !holderRan {
		t.Fatalf("too few samples to judge: %d before the kill, %d after the takeover, holder's pump seen running %v", before, after, holderRan)
	}

	// The fenced writes: the holder's under its epoch, then the other's.
	byWriter := map[string]int{}
	for _, a := range w.checkAudit() {
		want := map[string]int64{holder: epoch1, other: epoch2}[a.App]
		if a.Epoch != want {
			t.Errorf("a write by %s under epoch %d (want %d): %s", a.App, a.Epoch, want, a)
		}
		if a.Table == "proc_state" {
			byWriter[a.App]++
		}
	}
	if byWriter[holder] == 0 || byWriter[other] == 0 {
		t.Fatalf("messages processed per replica: %v; the kill did not split the stream", byWriter)
	}

	crashedExport := w.Run("export")
	w.assertTopics(crashedExport)

	// The uninterrupted run: the same rows on databases of its own, one
	// `flightfeed pump --drain`.
	clean := newWorld(t, "clean")
	clean.put(rows, base, 0, len(rows))
	clean.Run("pump", "--drain")

	if got, want := check.Mask(crashedExport), check.Mask(clean.Run("export")); got != want {
		t.Errorf("the export after the takeover differs from an uninterrupted run's:\n--- takeover\n%s\n--- uninterrupted\n%s", got, want)
	}
	if got, want := w.Run("ledger"), clean.Run("ledger"); got != want {
		t.Errorf("ledger after the takeover:\n%s\nuninterrupted:\n%s", got, want)
	}
	if got, want := w.MailboxDump(), clean.MailboxDump(); got != want {
		t.Errorf("mailbox results after the takeover differ from an uninterrupted run's:\n--- takeover\n%s\n--- uninterrupted\n%s", got, want)
	}
	t.Logf("%d rows; %s killed with %d processed and %d inserted; %s took over at epoch %d; messages committed: %v",
		len(rows), holder, atKill, insertedAtKill, other, epoch2, byWriter)
}

// freezeIdle freezes m (SIGSTOP) at a moment it has no transaction open on
// the feed's database, and returns when it froze.
//
// Why idle: a pump's transaction locks the pipeline_lock row first; a
// holder frozen inside one keeps that row lock, and the new holder's
// TakeEpoch (an UPDATE of the row) waits for it until the frozen process
// resumes — the takeover this test waits for would not happen while the
// holder is frozen. (Reported: the store sets no idle-in-transaction
// timeout.) So the process is frozen, then its sessions are checked; if one
// is inside a transaction it is resumed and frozen again a moment later.
func freezeIdle(t *testing.T, m *manager, w *feedWorld) time.Time {
	t.Helper()
	for range 50 {
		m.Freeze()
		at := time.Now()
		// Anything it sent just before the stop has reached the server by now.
		time.Sleep(200 * time.Millisecond)
		if w.openTransactions(m.id) == 0 {
			return at
		}
		m.Thaw()
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never had its transactions closed", m.id)
	return time.Time{}
}

// TestFrozenHolderCannotCommit freezes the holder (SIGSTOP) past its lease:
// the other replica takes the Lease and a newer epoch and processes the rows
// that arrive meanwhile. Then the frozen process resumes (SIGCONT) while
// more rows arrive, and the test asserts that it commits nothing.
//
// How that is observed rather than assumed: the write audit (installAudit)
// records, inside every committed transaction that writes the pump's
// tables, the writing process (PostgreSQL application_name = the manager's
// identity) and the pipeline_lock row as that transaction saw it. After the
// resume the audit holds no write by the old holder at all — not under its
// old epoch (which would show as app ≠ pipeline_lock holder) and not under a
// new one (it never got the Lease back: the new holder stayed alive). Every
// row that arrived while it was frozen or after it resumed was committed by
// the new holder under the new epoch. The old process itself reports that
// it lost the Lease and its pump stopped (its log and flightfeed_pump_running),
// and a transaction of the old epoch is refused by the database
// (store.ErrFenced).
//
// Whether the resumed pump first tries a transaction (and is fenced) or is
// first cancelled by its Lease elector (which sees at once that it has not
// renewed within the renew deadline) is a race inside the resumed process;
// the assertions hold either way, and the log line says which it was.
func TestFrozenHolderCannotCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: freezes a manager past its Lease")
	}
	e := newEnv(t)
	w := newWorld(t, "pek")
	managers := startTwo(e, fastLease)
	key := e.apply(w)

	holder, epoch1 := e.waitLeader(key, w)
	other := otherOf(holder)
	old := managers[holder]
	day := w.waitRequest()
	rows := workload(day, w.loc)
	base := time.Now().UTC().Truncate(time.Second)
	third := len(rows) / 3
	w.put(rows, base, 0, third)
	w.waitDrained(third)

	frozeAt := freezeIdle(t, old, w)
	w.put(rows, base, third, 2*third)
	var epoch2 int64
	// Waited for as an event (waitLong only ends a stuck test): how soon
	// the takeover comes is a figure, logged at the end.
	var tookOver time.Duration
	await.Eventually(t, other+" to take the Lease and a newer epoch from the frozen holder",
		waitLong, func() (bool, string) {
			lh, err := e.leaseHolder(t.Context(), key)
			if err != nil {
				return false, err.Error()
			}
			ph, ep, err := w.Lock(t.Context())
			if err != nil {
				return false, err.Error()
			}
			epoch2, tookOver = ep, time.Since(frozeAt)
			return lh == other && ph == other && ep > epoch1, fmt.Sprintf("Lease %q, pipeline_lock %q@%d", lh, ph, ep)
		})
	w.waitDrained(2 * third)
	if d := time.Since(frozeAt); d <= fastLease.duration {
		time.Sleep(fastLease.duration - d + fastLease.retry) // past its lease for sure
	}

	// Resume the old holder while rows keep arriving, so that its pump
	// finds work at the head the moment it wakes.
	audited := w.Audit()
	mark := audited[len(audited)-1].ID
	f := w.startFeeder(rows, base, 2*third, len(rows), 20*time.Millisecond)
	await.Eventually(t, "the first rows of the last third", waitLong, func() (bool, string) {
		return f.count() >= 3, fmt.Sprint(f.count())
	})
	old.Thaw()
	f.wait(t)
	w.waitDrained(len(rows))

	// The old process noticed and its pump went away.
	await.Eventually(t, holder+" to stop its pump", waitLong, func() (bool, string) {
		// pumpRunning is 0 for a series set to 0 or dropped, -1 for no answer.
		running := old.pumpRunning(key)
		leader, _ := old.metric("flightfeed_leader", key)
		logged := strings.Contains(old.Output(), "lost the lease; pump stopped")
		return running == 0 && leader == 0 && logged, fmt.Sprintf("pump_running %v, leader %v, lease loss logged %v", running, leader, logged)
	})
	// It did not come back: the new holder is alive and keeps both.
	if lh, err := e.leaseHolder(t.Context(), key); err != nil || lh != other {
		t.Fatalf("Lease held by %q (%v), want %s", lh, err, other)
	}
	if ph, ep, err := w.Lock(t.Context()); err != nil || ph != other || ep != epoch2 {
		t.Fatalf("pipeline_lock %q@%d (%v), want %s@%d", ph, ep, err, other, epoch2)
	}
	e.waitReady(key, other)

	// The audit: nothing by the old holder after it resumed; every row that
	// arrived from the freeze on was committed by the new holder.
	lastWriter := map[int64]proctest.Write{}
	for _, a := range w.checkAudit() {
		if a.App == holder && (a.ID > mark || a.Epoch != epoch1) {
			t.Errorf("the old holder committed after it was superseded: %s", a)
		}
		if a.Table == "proc_state" {
			lastWriter[a.MessageID] = a
		}
	}
	for id := int64(third + 1); id <= int64(len(rows)); id++ {
		a, ok := lastWriter[id]
		if !ok || a.App != other || a.Epoch != epoch2 {
			t.Errorf("mailbox row %d: committed by %+v, want %s at epoch %d", id, a, other, epoch2)
		}
	}
	for id := int64(1); id <= int64(third); id++ {
		if a := lastWriter[id]; a.App != holder || a.Epoch != epoch1 {
			t.Errorf("mailbox row %d: committed by %+v, want %s at epoch %d", id, a, holder, epoch1)
		}
	}
	if res := w.results(); res["FAILED"] != 0 || res[""] != 0 || res["SUCCEEDED"] == 0 {
		t.Errorf("mailbox results %v", res)
	}

	// Both topics, read as consumers must (read_committed): per FLID the
	// versions never go back, and they converge to the export.
	w.assertTopics(w.Run("export"))

	// The database refuses the old epoch.
	st, err := store.Open(t.Context(), w.DatabaseDSN, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if tx, err := st.Begin(t.Context(), epoch1); !errors.Is(err, store.ErrFenced) {
		if tx != nil {
			_ = tx.Rollback(t.Context())
		}
		t.Fatalf("a transaction of epoch %d (current %d) began: %v", epoch1, epoch2, err)
	}
	how := "cancelled by its Lease elector before it tried a transaction"
	if strings.Contains(old.Output(), "pump fenced") {
		how = "fenced at its first transaction"
	}
	t.Logf("%s frozen for %s; %s took over at epoch %d %s after the freeze (lease duration %s); after the resume the old pump was %s",
		holder, time.Since(frozeAt).Round(time.Millisecond), other, epoch2, tookOver.Round(100*time.Millisecond), fastLease.duration, how)
}

// TestOneFeedsTakeoverNeverPausesAnother: two feeds, each
// with two pump pods (`flightfeed pump --feed`). Rows stream into both
// mailboxes; feed one's leader is killed (SIGKILL, as a deleted pod that
// ignores its grace period) a third of the way through. Its standby takes
// the Lease and a newer epoch (how soon is logged: a figure, not an
// assertion), while feed two's leader keeps committing: between the kill
// and the takeover its mailbox count moves, and every write of feed two is
// its leader's, under one epoch.
func TestOneFeedsTakeoverNeverPausesAnother(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: four pump processes, kills one feed's leader")
	}
	e := newEnv(t)
	w1, w2 := newWorld(t, "one"), newWorld(t, "two")
	pods := map[string]*manager{}
	for _, id := range []string{"one-pump-a", "one-pump-b"} {
		pods[id] = e.startPump(id, "one", fastLease)
	}
	for _, id := range []string{"two-pump-a", "two-pump-b"} {
		pods[id] = e.startPump(id, "two", fastLease)
	}
	k1, k2 := e.apply(w1), e.apply(w2)
	lead1, epoch1 := e.waitLeader(k1, w1)
	lead2, epoch2 := e.waitLeader(k2, w2)
	other1 := map[string]string{"one-pump-a": "one-pump-b", "one-pump-b": "one-pump-a"}[lead1]
	day1, day2 := w1.waitRequest(), w2.waitRequest()

	rows1, rows2 := workload(day1, w1.loc), workload(day2, w2.loc)
	base := time.Now().UTC().Truncate(time.Second)
	f1 := w1.startFeeder(rows1, base, 0, len(rows1), 10*time.Millisecond)
	f2 := w2.startFeeder(rows2, base, 0, len(rows2), 20*time.Millisecond)
	await.Eventually(t, "a third of feed one's stream processed", waitLong, func() (bool, string) {
		n := w1.Processed()
		return n >= len(rows1)/3, fmt.Sprintf("%d of %d", n, len(rows1))
	})
	killedAt := time.Now()
	pods[lead1].Kill()

	// Feed two while feed one has no leader: between the kill and feed
	// one's takeover (two events, polled for; waitLong only ends a stuck
	// test) feed two's leader keeps committing the rows that keep
	// arriving. How long the takeover took is a figure, logged.
	atKill, insertedAtKill := w2.Processed(), f2.count()
	var took time.Duration
	var processed, inserted int
	await.EventuallyEvery(t, "feed one's standby to take the Lease and a newer epoch", waitLong, 100*time.Millisecond, func() (bool, string) {
		processed, inserted = w2.Processed(), f2.count()
		lh, err := e.leaseHolder(t.Context(), k1)
		if err != nil {
			return false, err.Error()
		}
		ph, ep, err := w1.Lock(t.Context())
		if err != nil {
			return false, err.Error()
		}
		took = time.Since(killedAt)
		return lh == other1 && ph == other1 && ep > epoch1, fmt.Sprintf("Lease %q, pipeline_lock %q@%d", lh, ph, ep)
	})
	t.Logf("feed one's takeover: %s after SIGKILL of its leader (lease duration %s); feed two processed %d -> %d meanwhile (%d -> %d inserted)",
		took.Round(time.Millisecond), fastLease.duration, atKill, processed, insertedAtKill, inserted)
	if insertedAtKill >= len(rows2) {
		t.Fatalf("feed two's stream was over before feed one's leader was killed (%d of %d inserted): the test proves nothing", insertedAtKill, len(rows2))
	}
	if processed <= atKill {
		t.Errorf("feed two paused during feed one's takeover: %d processed at the kill and at the takeover (%d -> %d inserted meanwhile)",
			atKill, insertedAtKill, inserted)
	}
	f1.wait(t)
	f2.wait(t)
	w1.waitDrained(len(rows1))
	w2.waitDrained(len(rows2))
	e.waitReady(k1, other1)
	e.waitReady(k2, lead2)
	for _, a := range w2.checkAudit() {
		if a.App != lead2 || a.Epoch != epoch2 {
			t.Errorf("feed two: a write by %s under epoch %d, led by %s at %d: %s", a.App, a.Epoch, lead2, epoch2, a)
		}
	}
	if v, ok := pods[lead2].metric("flightfeed_pump_running", k2); !ok || v != 1 {
		t.Errorf("feed two's leader reports its pump running %v (%v)", v, ok)
	}
}

// assertTopics reads both topics with a read_committed consumer
// (dispatchtest) and checks what a takeover must never break: per FLID the
// STATE_VERSION on KAFKA_SCHD never decreases in partition order and the
// last record per FLID is the export; KAFKA_MSG holds every committed
// notice and, per FLID, never an older one after a newer except a re-send
// of one already there (a crash between the Kafka commit and the mark).
func (w *feedWorld) assertTopics(export string) {
	w.t.Helper()
	state := dispatchtest.Records(w.t, w.Brokers, "KAFKA_SCHD")
	dispatchtest.AssertVersionsRise(w.t, state)
	dispatchtest.AssertConverged(w.t, w.Brokers, "KAFKA_SCHD", bytes.Split([]byte(export), []byte("\n")))
	rows, err := w.Pool.Query(w.t.Context(), `SELECT flid::text, state_version FROM msg_event_record WHERE kind = 'KAFKA_MSG'`)
	if err != nil {
		w.t.Fatal(err)
	}
	want := map[string][]int64{}
	for rows.Next() {
		var flid string
		var v int64
		if err := rows.Scan(&flid, &v); err != nil {
			w.t.Fatal(err)
		}
		want[flid] = append(want[flid], v)
	}
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	notices := dispatchtest.Records(w.t, w.Brokers, "KAFKA_MSG")
	dispatchtest.AssertNotices(w.t, notices, want)
	w.t.Logf("%s: %d state records, %d notices read read_committed", w.Name, len(state), len(notices))
}
