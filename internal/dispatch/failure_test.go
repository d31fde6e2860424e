package dispatch_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
)

// fastRetry makes failures show within a second or two.
var fastRetry = dispatch.Options{BackoffInitial: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
	StatsInterval: 20 * time.Millisecond, StallAfter: time.Second}

func fastClient() []kgo.Opt {
	return []kgo.Opt{kgo.RecordDeliveryTimeout(time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}
}

// The broker stops while the pump keeps committing (it never waits for
// Kafka); the dispatcher reports the outage and retries; the broker comes
// back on the same port with its log: everything pending arrives, nothing
// is lost, versions never decrease, the topic converges to the export.
func TestBrokerOutageLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("fault: the broker stops and comes back")
	}
	t.Parallel()
	e := newEnv(t)
	port, dir := loopback.FreePort(t), t.TempDir()
	start := func() *kfake.Cluster {
		t.Helper()
		var c *kfake.Cluster
		eventually(t, "broker starts on its port", func() bool {
			var err error
			c, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir),
				kfake.SeedTopics(3, stateTopic, noticeTopic))
			return err == nil
		})
		t.Cleanup(c.Close)
		return c
	}
	c := start()
	brokers := c.ListenAddrs()
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), fastRetry, fastClient()...)
	stop := run(t, d)

	e.snapshot(rec(1, "CA1"), rec(2, "CA2"), rec(3, "CA3"), rec(4, "CA4"))
	d.Notify()
	idle(t, d)

	c.Close()
	for i := range 20 {
		flid := flight.FLID(1 + i%5)
		if i == 7 {
			e.fdel(2)
		}
		e.flop(flid, "ESTT", fmt.Sprintf("09SEP2611%d0", i%10))
		d.Notify()
	}
	eventually(t, "the outage is reported", func() bool {
		st := d.Status()
		return st.Failing && st.LastErrorReason == dispatch.ReasonBrokerUnavailable && st.Pending > 0
	})
	st := d.Status()
	t.Logf("during the outage: pending %d, oldest %s, reason %s, error %q, broker %q",
		st.Pending, st.OldestPendingAge, st.LastErrorReason, st.LastError, st.BrokerError)
	if ok, err := d.Idle(t.Context()); err != nil || ok {
		t.Fatalf("idle during the outage: %v %v", ok, err)
	}

	start()
	idle(t, d)
	stop()
	// An outage is transient: retried, never parked.
	if st := d.Status(); st.Failing || st.Pending != 0 || st.Parked != 0 || st.ParkedTotal != 0 {
		t.Fatalf("after recovery: %+v", st)
	}
	records := dispatchtest.Records(t, brokers, stateTopic)
	dispatchtest.AssertVersionsRise(t, records)
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
	assertAllNotices(t, e, brokers)
}

// assertAllNotices checks that every committed notice is on the topic
// (duplicates tolerated).
func assertAllNotices(t *testing.T, e *env, brokers []string) {
	t.Helper()
	on := map[string]bool{}
	for _, v := range values(dispatchtest.Records(t, brokers, noticeTopic)) {
		on[v] = true
	}
	for _, p := range e.payloads(store.KindNotice) {
		if !on[p] {
			t.Errorf("notice lost: %s", p)
		}
	}
}

// A missing topic (auto-creation off, the default) is reported and
// retried, never expired; once the topic exists everything arrives.
func TestMissingTopicIsRetriedUntilCreated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := cluster(t, kfake.SeedTopics(3, noticeTopic))
	brokers := c.ListenAddrs()
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), fastRetry, fastClient()...)
	run(t, d)

	e.snapshot(rec(1, "CA1"), rec(2, "CA2"))
	e.fdel(1)
	d.Notify()
	eventually(t, "the missing topic is reported", func() bool {
		st := d.Status()
		return st.Failing && st.LastErrorReason == dispatch.ReasonTopicMissing
	})
	if !strings.Contains(d.Status().LastError, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("error %q", d.Status().LastError)
	}
	// The notices went through; the state events stay pending.
	eventually(t, "notices delivered", func() bool {
		return e.noticesOnTopic(t, brokers)
	})
	if n := e.count(`SELECT count(*) FROM msg_event_record WHERE kind = 'KAFKA_SCHD' AND attempts > 0 AND ` + pending); n == 0 {
		t.Fatal("state events not pending with attempts")
	}

	if err := c.CreateTopic(stateTopic, 3, nil); err != nil {
		t.Fatal(err)
	}
	idle(t, d)
	// Delivered means its Kafka transaction committed; the broker's
	// stable offset, which the reader stops at, can follow a moment later.
	export := e.export()
	await.EventuallyEvery(t, "KAFKA_SCHD to converge to the export", deadline, 20*time.Millisecond, func() (bool, string) {
		diff := dispatchtest.ConvergedDiff(t, brokers, stateTopic, export)
		return diff == "", "(-export +topic)\n" + diff
	})
	if got := keys(dispatchtest.Converge(t, brokers, stateTopic)); !slices.Equal(got, []string{"2"}) {
		t.Fatalf("keys %v", got)
	}
	// The tombstone that waited for the topic was not expired.
	var tombs int
	for _, r := range dispatchtest.Records(t, brokers, stateTopic) {
		if r.Key == "1" && r.Tombstone() && r.Value != nil {
			tombs++
		}
	}
	if tombs != 1 {
		t.Fatalf("%d tombstones of flight 1, want 1", tombs)
	}
}

// With auto-creation allowed, a missing topic is created by producing.
func TestAutoTopicCreationWhenAllowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := cluster(t, kfake.AllowAutoTopicCreation())
	brokers := c.ListenAddrs()
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, "  allowAutoTopicCreation: true"), fastRetry, fastClient()...)
	e.flop(9, "ESTT", "09SEP260900")
	deliverAll(t, d)
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
}

// Run returns promptly when its context ends, even in the middle of an
// outage, and Notify never blocks meanwhile. The idempotent producer (with
// kafka.transactions false) times out the records it never sent and counts
// failed attempts; the transactional one cannot even initialise, which is
// reported the same way, and it has sent nothing.
func TestRunStopsDuringOutage(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		extra    string
		attempts int64
	}{
		"idempotent":    {extra: "  transactions: false\n", attempts: 2},
		"transactional": {attempts: 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cl := cluster(t, kfake.SeedTopics(3, stateTopic, noticeTopic))
			brokers := cl.ListenAddrs()
			d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, c.extra), fastRetry, fastClient()...)
			cl.Close()
			e.flop(1, "ESTT", "09SEP260900")
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- d.Run(ctx) }()
			for range 1000 {
				d.Notify()
			}
			eventually(t, "the outage is reported", func() bool {
				st := d.Status()
				return st.Failing && st.LastErrorReason == dispatch.ReasonBrokerUnavailable && strings.Contains(st.BrokerError, "connection refused")
			})
			if c.attempts > 0 {
				// Records that were never sent time out and count as
				// failed attempts, with the reason the broker could not
				// be reached.
				eventually(t, "a failed attempt is recorded", func() bool {
					return e.count(`SELECT count(*) FROM msg_event_record WHERE attempts > 0
						AND last_error LIKE '%timed out%connection refused%' AND `+pending) == c.attempts
				})
				if st := d.Status(); !strings.Contains(st.LastError, "connection refused") {
					t.Fatalf("status %+v", st)
				}
			}
			cancel()
			select {
			case err := <-errc:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case <-time.After(deadline):
				t.Fatal("Run did not return")
			}
			if ok, _ := d.Idle(t.Context()); ok {
				t.Fatal("undelivered events were dropped")
			}
			if c.attempts == 0 {
				if n := e.count(`SELECT count(*) FROM msg_event_record WHERE attempts > 0`); n != 0 {
					t.Fatalf("%d attempts counted without a producer", n)
				}
			}
		})
	}
}

// A pass that outlives kafka's transaction timeout — the broker does not
// answer in the middle of it — finds its transaction aborted by the broker
// and its producer's epoch bumped (INVALID_PRODUCER_EPOCH), exactly what a
// newer leader's producer would cause. This dispatcher is still the
// feed's leader (the database says so), so it is not fenced: it aborts,
// its producer recovers (KIP-588), the pass is sent again and everything
// arrives. A deposed leader still stops (TestDeposedLeaderCannotPublish).
func TestTransactionTimeoutMidPassIsNotAFencing(t *testing.T) {
	if testing.Short() {
		t.Skip("fault: the broker stalls longer than the transaction timeout")
	}
	t.Parallel()
	e := newEnv(t)
	c := cluster(t, kfake.SeedTopics(3, stateTopic, noticeTopic))
	brokers := c.ListenAddrs()
	// The pass's commit (EndTxn) waits while stalled: the broker holds it
	// unanswered, its records already in the open transaction, longer than
	// the 1 s transaction timeout.
	var stalled atomic.Bool
	var stalls atomic.Int32
	release := make(chan struct{})
	c.ControlKey(int16(kmsg.EndTxn), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !stalled.Load() {
			return nil, nil, false
		}
		stalls.Add(1)
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), fastRetry,
		kgo.TransactionTimeout(time.Second), kgo.RecordDeliveryTimeout(20*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	_, done := runDispatcher(t, d)
	e.snapshot(rec(1, "CA1"), rec(2, "CA2"))
	d.Notify()
	idle(t, d)

	stalled.Store(true)
	for i := range 10 {
		e.flop(flight.FLID(1+i%2), "ESTT", fmt.Sprintf("09SEP2611%d0", i))
	}
	d.Notify()
	time.Sleep(2500 * time.Millisecond) // the broker aborts the open transaction after 1 s
	t.Logf("stalled commits: %d; status %+v", stalls.Load(), d.Status())
	stalled.Store(false)
	close(release)

	idle(t, d)
	select {
	case err := <-done:
		t.Fatalf("the dispatcher stopped: %v", err)
	default:
	}
	if st := d.Status(); st.Stopped || st.LastErrorReason == dispatch.ReasonFenced || st.Pending != 0 || st.ClientsRenewed != 1 {
		t.Fatalf("after the aborted transaction: %+v, want one client renewed", st)
	}
	records := dispatchtest.Records(t, brokers, stateTopic)
	dispatchtest.AssertVersionsRise(t, records)
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
	assertAllNotices(t, e, brokers)
}
