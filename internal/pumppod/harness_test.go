package pumppod_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// Test timings: short, so that the tests run quickly; every wait is a poll
// with a deadline, never an assertion on how long something took.
const (
	testLease    = 2 * time.Second
	testRenew    = 1500 * time.Millisecond
	testRetry    = 200 * time.Millisecond
	testInterval = 300 * time.Millisecond
	// testSecretResync: how often the replicas read a feed's Secrets
	// again (nothing watches Secrets; rotation tests wait for it).
	testSecretResync = 500 * time.Millisecond
	waitLong         = 60 * time.Second
)

// harness is one test's world: its own namespace, PostgreSQL and MariaDB
// databases, a Kafka broker, the Secrets of the example feed of docs/first-feed.md, and the
// runners the replicas built.
type harness struct {
	t       *testing.T
	c       client.Client
	ns      string
	pgDSN   string
	mboxDSN string
	brokers []string
	runners *runnerRegistry
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		t: t, c: kubetest.Client(t, restCfg),
		ns:      "t-" + strings.ToLower(strings.NewReplacer("_", "-", "/", "-").Replace(t.Name())),
		pgDSN:   pgtest.New(t),
		mboxDSN: mailboxtest.NewMailbox(t),
		brokers: kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG"),
		runners: &runnerRegistry{},
	}
	// A suffix keeps -count=N runs apart on the shared control plane.
	if len(h.ns) > 56 {
		h.ns = strings.TrimRight(h.ns[:56], "-")
	}
	h.ns += "-" + utilrand.String(6)
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}})
	return h
}

func (h *harness) ctx() context.Context { return h.t.Context() }

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	if err := h.c.Create(h.ctx(), obj); err != nil {
		h.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// secrets creates the two Secrets of feed name: <name>-mailbox and <name>-db,
// labelled and naming the feed (flightfeed.aero/feeds).
func (h *harness) secrets(name string) {
	h.t.Helper()
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: name}, Name: name + "-mailbox", Namespace: h.ns},
		StringData: map[string]string{"dsn": h.mboxDSN}})
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: name}, Name: name + "-db", Namespace: h.ns},
		StringData: map[string]string{"dsn": h.pgDSN}})
}

// feed creates the example FlightFeed of docs/first-feed.md named name (its Secrets named after
// it), pointed at this test's broker; more are old, new pairs of the
// manifest's text to replace as well.
func (h *harness) feed(name string, more ...string) types.NamespacedName {
	h.t.Helper()
	doc := strings.NewReplacer(append([]string{
		"name: pek,", "name: " + name + ",",
		"namespace: default", "namespace: " + h.ns,
		"pek-mailbox", name + "-mailbox",
		"pek-db", name + "-db",
		`"127.0.0.1:9092"`, `"` + strings.Join(h.brokers, `", "`) + `"`,
	}, more...)...).Replace(specManifest)
	for i := 1; i < len(more); i += 2 {
		if !strings.Contains(doc, more[i]) {
			h.t.Fatalf("the SPEC manifest no longer holds %q, which this test replaces", more[i-1])
		}
	}
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		h.t.Fatal(err)
	}
	h.create(&obj)
	return types.NamespacedName{Namespace: h.ns, Name: name}
}

// replica is one operator replica (one manager) of the test.
type replica struct {
	identity string
	registry *prometheus.Registry
	probe    string
	cancel   context.CancelFunc
	done     chan error
}

// startReplica runs pumppod.New — the pod `flightfeed pump --feed` runs —
// with the test runner factory and short Lease timings.
func (h *harness) startReplica(identity string) *replica {
	h.t.Helper()
	return h.startReplicaWith(identity, h.runners.factory)
}

// startReplicaWith is startReplica with the given runner factory; edits
// change the options before the manager is built.
func (h *harness) startReplicaWith(identity string, factory pumppod.RunnerFactory, edits ...func(*pumppod.Options)) *replica {
	h.t.Helper()
	r := &replica{identity: identity, registry: prometheus.NewRegistry(), probe: loopback.FreeAddr(h.t), done: make(chan error, 1)}
	o := pumppod.Options{
		RestConfig:     restCfg,
		MetricsAddr:    "0",
		ProbeAddr:      r.probe,
		APIAddr:        "0",
		Identity:       identity,
		LeaseDuration:  testLease,
		RenewDeadline:  testRenew,
		RetryPeriod:    testRetry,
		StatusInterval: testInterval,
		// The tests read figures from the status at every report; the
		// bound on status writes has its own test (statusrate_test.go).
		StatusFiguresInterval: testInterval,
		SecretResync:          testSecretResync,
		ShutdownTimeout:       30 * time.Second,
		Factory:               factory,
		Registry:              r.registry,
		Namespaces:            []string{h.ns},
		Log:                   ctrl.Log.WithName(identity),
	}
	for _, edit := range edits {
		edit(&o)
	}
	mgr, err := pumppod.New(o)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- mgr.Start(ctx) }()
	h.t.Cleanup(func() { r.stop(h.t) })
	return r
}

// stop shuts the replica down gracefully and waits for it.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok && err != nil {
			t.Errorf("replica %s: %v", r.identity, err)
		}
		if ok {
			close(r.done)
		}
	case <-time.After(waitLong):
		t.Errorf("replica %s did not stop within %s", r.identity, waitLong)
	}
}

// getFeed reads the FlightFeed from the API server.
func (h *harness) getFeed(key types.NamespacedName) (*v1alpha1.FlightFeed, error) {
	var ff v1alpha1.FlightFeed
	err := h.c.Get(h.ctx(), key, &ff)
	return &ff, err
}

// waitCondition waits until the feed's condition has status and reason
// for the feed's current generation, and returns the feed.
func (h *harness) waitCondition(key types.NamespacedName, ct v1alpha1.ConditionType, status metav1.ConditionStatus, reason v1alpha1.ConditionReason) *v1alpha1.FlightFeed {
	h.t.Helper()
	var ff *v1alpha1.FlightFeed
	await.Eventually(h.t, fmt.Sprintf("%s %s=%s (%s)", key, ct, status, reason), waitLong, func() (bool, string) {
		var err error
		if ff, err = h.getFeed(key); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(ff.Status.Conditions, string(ct))
		if c == nil {
			return false, "no condition"
		}
		return c.Status == status && c.Reason == string(reason) && c.ObservedGeneration == ff.Generation &&
				ff.Status.ObservedGeneration == ff.Generation,
			fmt.Sprintf("%s %s: %s (generation %d, observed %d)", c.Status, c.Reason, c.Message, ff.Generation, c.ObservedGeneration)
	})
	return ff
}

// waitReady waits for Ready=True and returns the feed.
func (h *harness) waitReady(key types.NamespacedName) *v1alpha1.FlightFeed {
	h.t.Helper()
	return h.waitCondition(key, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonRunning)
}

// waitEvent waits for an Event with reason on the FlightFeed whose note
// contains substr, and returns it.
func (h *harness) waitEvent(key types.NamespacedName, reason, substr string) eventsv1.Event {
	h.t.Helper()
	var found eventsv1.Event
	await.Eventually(h.t, fmt.Sprintf("event %s %q on %s", reason, substr, key), waitLong, func() (bool, string) {
		var list eventsv1.EventList
		if err := h.c.List(h.ctx(), &list, client.InNamespace(key.Namespace)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind != "FlightFeed" || e.Regarding.Name != key.Name {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Note)
			if e.Reason == reason && strings.Contains(e.Note, substr) {
				found = e
				return true, ""
			}
		}
		slices.Sort(seen)
		return false, strings.Join(seen, " | ")
	})
	return found
}

// lease reads the feed's Lease (the replicas' namespace is the test's).
func (h *harness) lease(key types.NamespacedName) (*coordinationv1.Lease, error) {
	var l coordinationv1.Lease
	err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: pumppod.FeedLeaseName(key)}, &l)
	return &l, err
}

// runnerOf waits for a running runner of identity newer than after (an
// epoch), and returns it.
func (h *harness) runnerOf(identity string, after int64) *testRunner {
	h.t.Helper()
	var found *testRunner
	await.Eventually(h.t, fmt.Sprintf("a runner of %s with an epoch above %d", identity, after), waitLong, func() (bool, string) {
		var seen []string
		for _, r := range h.runners.all() {
			seen = append(seen, describe(r))
			if r.identity == identity && r.epoch > after && !r.stopped() && r.Status().Running {
				found = r
				return true, ""
			}
		}
		return false, strings.Join(seen, ", ")
	})
	return found
}
