package pumppod_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/internal/pumppod"
)

// TestLeaseElectorOnAFakeClock drives two candidates for one Lease on the
// real API server, with time under the test's control: a held Lease is
// taken over only after the candidate saw it unchanged for the whole lease
// duration, the old holder then loses it at its next renewal, and a
// released Lease is taken at once.
func TestLeaseElectorOnAFakeClock(t *testing.T) {
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := "t-elector-" + utilrand.String(6)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: pumppod.FeedLeaseName(types.NamespacedName{Namespace: ns, Name: "pek"})}
	owner := metav1.OwnerReference{APIVersion: "flightfeed.aero/v1alpha1", Kind: "FlightFeed", Name: "pek", UID: "uid-1"}
	timings := pumppod.LeaseTimings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	clkA := clocktesting.NewFakeClock(time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC))
	clkB := clocktesting.NewFakeClock(time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC))
	a := pumppod.NewTestElector(kube.CoordinationV1(), key, "a", owner, timings, clkA)
	b := pumppod.NewTestElector(kube.CoordinationV1(), key, "b", owner, timings, clkB)

	if ok, _ := a.Try(ctx); !ok {
		t.Fatal("a could not take a free Lease")
	}
	lease, err := kube.CoordinationV1().Leases(ns).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != "a" || ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) != 15 ||
		len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != "uid-1" {
		t.Fatalf("lease %+v", lease)
	}
	if ok, holder := b.Try(ctx); ok || holder != "a" {
		t.Fatalf("b took a held Lease (%v, holder %q)", ok, holder)
	}
	// a renews; b's wait starts again from when it sees the renewal.
	clkA.Step(5 * time.Second)
	clkB.Step(5 * time.Second)
	if ok, _ := a.Try(ctx); !ok {
		t.Fatal("a could not renew")
	}
	if ok, _ := b.Try(ctx); ok {
		t.Fatal("b took a freshly renewed Lease")
	}
	clkB.Step(14 * time.Second)
	if ok, _ := b.Try(ctx); ok {
		t.Fatal("b took the Lease before seeing it unchanged for the lease duration")
	}
	clkB.Step(time.Second)
	if ok, _ := b.Try(ctx); !ok {
		t.Fatal("b did not take a Lease unchanged for the lease duration")
	}
	lease, err = kube.CoordinationV1().Leases(ns).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil || ptr.Deref(lease.Spec.LeaseTransitions, 0) != 2 {
		t.Fatalf("transitions after the takeover: %+v %v", lease.Spec.LeaseTransitions, err)
	}

	// a, still believing it leads, learns at its next renewal.
	held := make(chan error, 1)
	go func() { held <- a.Hold(ctx) }()
	if err := stepUntil(t, clkA, timings.RetryPeriod, held); !errors.Is(err, pumppod.ErrLeaseLost) {
		t.Fatalf("hold ended with %v", err)
	}
	if a.Leading() {
		t.Fatal("a still believes it leads")
	}

	// b releases; a takes the Lease at once, without waiting it out.
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := kube.CoordinationV1().Leases(ns).Get(ctx, key.Name, metav1.GetOptions{}); err != nil || l.Spec.HolderIdentity != nil {
		t.Fatalf("after release: %+v %v", l, err)
	}
	if ok, _ := a.Try(ctx); !ok {
		t.Fatal("a did not take the released Lease at once")
	}
}

// stepUntil advances clk by step until done delivers, and returns what it
// delivered.
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, step time.Duration, done <-chan error) error {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return err
		default:
		}
		clk.Step(step)
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("timed out stepping the clock")
	return nil
}

// countingLeases counts the standby's reads and watches of its Lease;
// refuseWatch makes the API server refuse the watch (a Role without it).
type countingLeases struct {
	coordinationv1client.LeasesGetter
	refuseWatch   bool
	gets, watches *atomic.Int32
}

type countingLeaseInterface struct {
	coordinationv1client.LeaseInterface
	c countingLeases
}

func (c countingLeases) Leases(ns string) coordinationv1client.LeaseInterface {
	return countingLeaseInterface{LeaseInterface: c.LeasesGetter.Leases(ns), c: c}
}

func (l countingLeaseInterface) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	l.c.gets.Add(1)
	return l.LeaseInterface.Get(ctx, name, o)
}

func (l countingLeaseInterface) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	l.c.watches.Add(1)
	if l.c.refuseWatch {
		return nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), "", errors.New("RBAC: watch not allowed"))
	}
	return l.LeaseInterface.Watch(ctx, o)
}

// awaitVersion waits (in real time) until the elector observed version rv.
func awaitVersion(t *testing.T, observed <-chan string, rv string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-observed:
			if got == rv {
				return
			}
		case <-timeout:
			t.Fatalf("the standby did not observe version %s without reading the Lease again", rv)
		}
	}
}

// TestStandbyWatchesTheLease: a standby learns of the holder's renewals by
// a watch, when the renewal happens rather than at its next read, and
// reads the Lease no more while it waits: it takes the Lease exactly one
// lease duration after the last renewal it saw (by its own clock), and a
// released Lease at once, without its clock moving.
func TestStandbyWatchesTheLease(t *testing.T) {
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := "t-watch-" + utilrand.String(6)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: pumppod.FeedLeaseName(types.NamespacedName{Namespace: ns, Name: "pek"})}
	owner := metav1.OwnerReference{APIVersion: "flightfeed.aero/v1alpha1", Kind: "FlightFeed", Name: "pek", UID: "uid-1"}
	timings := pumppod.LeaseTimings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	t0 := time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC)
	clkA, clkB := clocktesting.NewFakeClock(t0), clocktesting.NewFakeClock(t0)
	var gets, watches atomic.Int32
	leasesB := countingLeases{LeasesGetter: kube.CoordinationV1(), gets: &gets, watches: &watches}
	a := pumppod.NewTestElector(kube.CoordinationV1(), key, "a", owner, timings, clkA)
	b := pumppod.NewTestElector(leasesB, key, "b", owner, timings, clkB)
	observedB := b.Observed()

	if ok, _ := a.Try(ctx); !ok {
		t.Fatal("a could not take a free Lease")
	}
	lease, err := kube.CoordinationV1().Leases(ns).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acquired := make(chan bool, 1)
	go func() { acquired <- b.Acquire(ctx) }()
	awaitVersion(t, observedB, lease.ResourceVersion)

	// a renews three times, 5 s apart by b's clock; b sees each renewal
	// as it happens.
	for range 3 {
		clkA.Step(5 * time.Second)
		clkB.Step(5 * time.Second)
		if ok, _ := a.Try(ctx); !ok {
			t.Fatal("a could not renew")
		}
		lease, err = kube.CoordinationV1().Leases(ns).Get(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		awaitVersion(t, observedB, lease.ResourceVersion)
	}
	if n := gets.Load(); n != 1 {
		t.Fatalf("the standby read the Lease %d times while it waited, want 1 (then a watch)", n)
	}
	if n := watches.Load(); n != 1 {
		t.Fatalf("the standby opened %d watches, want 1", n)
	}
	// a stops renewing: b takes the Lease one lease duration after the
	// last renewal it saw, not before.
	clkB.Step(timings.LeaseDuration - time.Second)
	select {
	case <-acquired:
		t.Fatal("b took the Lease before seeing it unchanged for the lease duration")
	case <-time.After(300 * time.Millisecond):
	}
	clkB.Step(time.Second)
	select {
	case ok := <-acquired:
		if !ok {
			t.Fatal("b's acquire ended without the Lease")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b did not take the Lease one lease duration after the last renewal it saw")
	}
	if l, err := kube.CoordinationV1().Leases(ns).Get(ctx, key.Name, metav1.GetOptions{}); err != nil || ptr.Deref(l.Spec.HolderIdentity, "") != "b" {
		t.Fatalf("after the takeover: %+v %v", l, err)
	}

	// a, now the standby, watches; b releases: a takes the Lease at once,
	// with no clock moving.
	go func() { acquired <- a.Acquire(ctx) }()
	time.Sleep(300 * time.Millisecond) // let a read the Lease and watch it
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-acquired:
		if !ok {
			t.Fatal("a's acquire ended without the Lease")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a did not take the released Lease at once")
	}
}

// TestStandbyPollsWhenTheWatchIsRefused: a Role without watch on the
// Lease leaves the standby reading it every retry period, as before: it
// still takes over a Lease its holder stopped renewing.
func TestStandbyPollsWhenTheWatchIsRefused(t *testing.T) {
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := "t-nowatch-" + utilrand.String(6)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: pumppod.FeedLeaseName(types.NamespacedName{Namespace: ns, Name: "pek"})}
	owner := metav1.OwnerReference{APIVersion: "flightfeed.aero/v1alpha1", Kind: "FlightFeed", Name: "pek", UID: "uid-1"}
	timings := pumppod.LeaseTimings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	t0 := time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC)
	clkB := clocktesting.NewFakeClock(t0)
	var gets, watches atomic.Int32
	a := pumppod.NewTestElector(kube.CoordinationV1(), key, "a", owner, timings, clocktesting.NewFakeClock(t0))
	b := pumppod.NewTestElector(countingLeases{LeasesGetter: kube.CoordinationV1(), refuseWatch: true, gets: &gets, watches: &watches},
		key, "b", owner, timings, clkB)
	if ok, _ := a.Try(ctx); !ok {
		t.Fatal("a could not take a free Lease")
	}
	done := make(chan error, 1)
	go func() {
		if !b.Acquire(ctx) {
			done <- errors.New("acquire ended without the Lease")
			return
		}
		done <- nil
	}()
	if err := stepUntil(t, clkB, timings.RetryPeriod, done); err != nil {
		t.Fatal(err)
	}
	if n := watches.Load(); n != 1 {
		t.Fatalf("%d watches asked for within %s of a refusal, want 1", n, 5*time.Minute)
	}
	if n := gets.Load(); n < 3 {
		t.Fatalf("only %d reads of the Lease: the standby did not poll", n)
	}
}
