package pumppod

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"

	"github.com/flightfeed/flightfeed/internal/feedrun"
)

// TestElector exposes the Lease elector to the envtest tests of package
// controllers_test, with an injected clock.
type TestElector struct{ e *leaseElector }

func NewTestElector(leases coordinationv1client.LeasesGetter, key types.NamespacedName, identity string,
	owner metav1.OwnerReference, timings LeaseTimings, clk clock.Clock) *TestElector {
	return &TestElector{e: newLeaseElector(leases, key, identity, metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{owner}}, timings, clk)}
}

func (t *TestElector) Try(ctx context.Context) (bool, string) {
	ok, holder, _ := t.e.try(ctx)
	return ok, holder
}
func (t *TestElector) Hold(ctx context.Context) error    { return t.e.hold(ctx) }
func (t *TestElector) Release(ctx context.Context) error { return t.e.release(ctx) }
func (t *TestElector) Leading() bool                     { return t.e.isLeading() }
func (t *TestElector) Acquire(ctx context.Context) bool  { return t.e.acquire(ctx) }

// Observed returns the Lease versions the elector observes, as it
// observes them (set before the elector runs).
func (t *TestElector) Observed() <-chan string {
	ch := make(chan string, 100)
	t.e.onObserve = func(rv string) { ch <- rv }
	return ch
}

var ErrLeaseLost = errLeaseLost

// Report sets the series of one status report of the leader (running: a
// pump runs), as the feed supervisor does.
func (m *Metrics) Report(key types.NamespacedName, running bool, st feedrun.Status, now time.Time) {
	m.report(key, running, st, nil, now)
}
