package pumppod_test

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
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
