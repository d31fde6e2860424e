package pumppod_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// busyRunner is a test runner whose figures move at every look, like a
// pump processing messages all the time.
type busyRunner struct {
	*testRunner
	looks atomic.Int64
}

func (b *busyRunner) Status() feedrun.Status {
	s := b.testRunner.Status()
	n := b.looks.Add(1)
	s.Counts[store.StatusSucceeded] = n
	s.LastProcessedID, s.QueueDepth = n, n
	s.Lag, s.MessagesPerSecond = time.Duration(n)*time.Second, float64(n)
	return s
}

// A busy feed's moving figures go to the metrics at every report, but to
// the FlightFeed's status at most every figures interval (30 s by
// default): while only figures move, the object's resourceVersion does
// not change, whatever the number of reports. A condition change is
// written at once, with the figures of the moment.
func TestBusyFeedStatusWritesAreBounded(t *testing.T) {
	h := newHarness(t)
	var busy atomic.Pointer[busyRunner]
	factory := func(ctx context.Context, p pumppod.RunParams) (pumppod.FeedRunner, error) {
		r, err := h.runners.factory(ctx, p)
		if err != nil {
			return nil, err
		}
		b := &busyRunner{testRunner: r.(*testRunner)}
		busy.Store(b)
		return b, nil
	}
	rep := h.startReplicaWith("replica-a", factory, func(o *pumppod.Options) {
		o.StatusFiguresInterval = 0 // the default, 30s
	})
	h.secrets("pek")
	key := h.feed("pek")
	ff := h.waitReady(key)

	wc, err := client.NewWithWatch(restCfg, client.Options{Scheme: h.c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(h.ctx(), &v1alpha1.FlightFeedList{}, client.InNamespace(h.ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: ff.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var writes atomic.Int64
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified {
				if obj, ok := ev.Object.(*v1alpha1.FlightFeed); ok && obj.Name == key.Name {
					writes.Add(1)
				}
			}
		}
	}()

	// At least 20 reports see new figures (the reporter looks at the
	// runner five times per report interval, and once more per report).
	b := busy.Load()
	from := b.looks.Load()
	await.Eventually(t, "120 looks at the busy runner", waitLong, func() (bool, string) {
		n := b.looks.Load()
		return n >= from+120, fmt.Sprint(n - from)
	})
	// The metrics carry the figures of the last reports.
	seen := float64(b.looks.Load())
	wantMetricFunc(t, rep, "flightfeed_queue_lag_seconds", map[string]string{"feed": "pek"}, fmt.Sprintf(">= %v", seen),
		func(v float64) bool { return v >= seen })
	if n := writes.Load(); n > 1 {
		t.Fatalf("%d status writes while only figures moved (at most one figures interval may end in the window)", n)
	}

	// A condition change is written at once, with the figures of now.
	before := b.looks.Load()
	b.setStatus(func(s *feedrun.Status) {
		s.HeadID, s.HeadBlockedSince, s.HeadLastError = 7, time.Now().Add(-time.Minute), "connection refused"
	})
	ff = h.waitCondition(key, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonHeadBlocked)
	if ff.Status.Pump == nil || ff.Status.Pump.Counts == nil || ff.Status.Pump.Counts.Succeeded < before {
		t.Fatalf("the condition's write carried old figures: %+v (runner at %d)", ff.Status.Pump, before)
	}
	w.Stop()
	<-watched
}

// A database outage of one feed shows in its conditions and metrics, and
// never in the replica's readiness: /readyz answers for the manager alone.
func TestDatabaseOutageLeavesTheReplicaReady(t *testing.T) {
	h := newHarness(t)
	rep := h.startReplica("replica-a")
	// The feed's database does not answer: nothing listens at its port.
	h.pgDSN = "postgres://postgres@" + loopback.FreeAddr(t) + "/none?sslmode=disable&connect_timeout=2"
	h.secrets("pek")
	key := h.feed("pek")
	ff := h.waitCondition(key, v1alpha1.ConditionDatabaseReachable, metav1.ConditionFalse, v1alpha1.ReasonUnreachable)
	if len(h.runners.all()) != 0 {
		t.Fatal("a pump was built without its database")
	}
	for _, c := range ff.Status.Conditions {
		if c.Type == string(v1alpha1.ConditionReady) && c.Status != metav1.ConditionFalse {
			t.Fatalf("Ready %+v", c)
		}
	}
	wantMetric(t, rep, "flightfeed_pump_running", map[string]string{"feed": "pek"}, 0)
	wantMetric(t, rep, "flightfeed_leader", map[string]string{"feed": "pek"}, 1)
	h.waitEvent(key, pumppod.ReasonPumpFailed, "connect to database")
	for _, path := range []string{"/readyz?verbose=1", "/healthz"} {
		if code, body := httpGet(t, "http://"+rep.probe+path); code != http.StatusOK {
			t.Fatalf("%s with a feed's database down: %d %s", path, code, body)
		}
	}
	if _, body := httpGet(t, "http://"+rep.probe+"/readyz?verbose=1"); !strings.Contains(body, "apiserver ok") || !strings.Contains(body, "informers ok") {
		t.Fatalf("/readyz does not check the API server and the informers:\n%s", body)
	}
}

// FlightFeedDays are capped per feed: the newest retention.flightFeedDays
// days of the ledger have one, older days' objects are deleted.
func TestFlightFeedDaysCapped(t *testing.T) {
	h := newHarness(t)
	h.startReplica("replica-a")
	h.secrets("pek")
	key := h.feed("pek", "routingId: AODB}", "routingId: AODB}\n  retention: {flightFeedDays: 2}")
	h.waitReady(key)
	runner := h.runnerOf("replica-a", 0)
	days := []string{"2026-09-07", "2026-09-08", "2026-09-09", "2026-09-10"}
	for i, day := range days[:2] {
		h.deliverRESP(runner, int64(100+i), day, storetest.Record(flight.FLID(i+1), "CA1", day))
	}
	listDays := func() ([]string, error) {
		var list v1alpha1.FlightFeedDayList
		if err := h.c.List(h.ctx(), &list, client.InNamespace(h.ns), client.MatchingLabels{v1alpha1.LabelFeed: key.Name}); err != nil {
			return nil, err
		}
		var out []string
		for _, d := range list.Items {
			if d.DeletionTimestamp.IsZero() {
				out = append(out, d.Spec.Day)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	want := func(wantDays []string) {
		t.Helper()
		await.Eventually(t, fmt.Sprintf("FlightFeedDays %v", wantDays), waitLong, func() (bool, string) {
			got, err := listDays()
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(got, wantDays), fmt.Sprint(got)
		})
	}
	want(days[:2])
	for i, day := range days[2:] {
		h.deliverRESP(runner, int64(200+i), day, storetest.Record(flight.FLID(i+10), "CA2", day))
	}
	want(days[2:])
	if n := len(h.ledger()); n != 4 {
		t.Fatalf("the ledger holds %d days; the cap is on the objects only", n)
	}
}

// While the pump runs, flightfeed_mailbox_reachable and
// flightfeed_database_reachable mirror its MailboxReachable and
// DatabaseReachable: a mailbox that does not answer is 0 beside a
// database that does (1), and both series go with the pump.
func TestReachabilityGauges(t *testing.T) {
	h := newHarness(t)
	rep := h.startReplica("replica-a")
	// The feed's mailbox does not answer: nothing listens at its port.
	h.mboxDSN = "root@tcp(" + loopback.FreeAddr(t) + ")/none?timeout=2s"
	h.secrets("pek")
	key := h.feed("pek")
	h.waitCondition(key, v1alpha1.ConditionMailboxReachable, metav1.ConditionFalse, v1alpha1.ReasonUnreachable)
	wantMetric(t, rep, "flightfeed_pump_running", map[string]string{"feed": "pek"}, 1)
	wantMetric(t, rep, "flightfeed_mailbox_reachable", map[string]string{"feed": "pek"}, 0)
	wantMetric(t, rep, "flightfeed_database_reachable", map[string]string{"feed": "pek"}, 1)
	wantMetric(t, rep, "flightfeed_kafka_clients_renewed_total", map[string]string{"feed": "pek"}, 0)
}
