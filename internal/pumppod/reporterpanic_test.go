package pumppod

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/serving"
)

// panicsWhere is flightfeed_pump_panics_total{where} of feed pek in reg.
func panicsWhere(t *testing.T, reg *prometheus.Registry, where string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "flightfeed_pump_panics_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelOf(m, "where") == where && labelOf(m, labelFeed) == "pek" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A status reporter whose reports panic is counted
// (where=status-reporter), restarted with backoff, and reports again: the
// FlightFeed's status follows the generation after the panics. Not
// parallel: the arming is the process's.
func TestStatusReporterPanicIsRecovered(t *testing.T) {
	scheme, err := serving.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	ff := &v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Namespace: "airport", Name: "pek", UID: "uid-1", Generation: 4}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ff).WithStatusSubresource(ff).Build()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "airport", Name: "pek"}
	s := &feedSupervisor{key: key, log: logr.Discard(), poke: make(chan struct{}, 1),
		deps: &supervisorDeps{clock: clock.RealClock{}, metrics: m, status: statusWriter{reader: c, writer: c},
			reportInterval: 20 * time.Millisecond, figuresInterval: 20 * time.Millisecond,
			restartBackoff: time.Millisecond, maxRestartBackoff: 10 * time.Millisecond, identity: "replica-a"},
		desired: feedDesired{Generation: 4, UID: "uid-1"},
		st:      leaderState{leading: true, since: time.Now(), phase: phaseWaiting}}
	defer failpoint.ArmPanic(failpoint.StatusReport, 3)()

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.runReporter(ctx)
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var got v1alpha1.FlightFeed
		if err := c.Get(t.Context(), key, &got); err != nil {
			t.Fatal(err)
		}
		if panicsWhere(t, reg, whereStatusReporter) == 3 && got.Status.ObservedGeneration == 4 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("after 60 s: %v panics counted, status not written after them", panicsWhere(t, reg, whereStatusReporter))
}
