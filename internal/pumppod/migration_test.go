package pumppod_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/pumpserver"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// oldReplica plays a replica of a release before the namespaced Leases:
// it holds the feed's legacy Lease (in the feed's namespace) and renews it
// every retry period until stopped.
type oldReplica struct {
	mu       sync.Mutex
	renewing bool
	renewals int
	stop     chan struct{}
	done     chan struct{}
}

func (h *harness) startOldReplica(key types.NamespacedName, identity string) *oldReplica {
	h.t.Helper()
	ff, err := h.getFeed(key)
	if err != nil {
		h.t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: pumppod.LegacyLeaseName(key.Name), Namespace: key.Namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FlightFeed",
				Name: ff.Name, UID: ff.UID, Controller: ptr.To(true)}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(identity), LeaseDurationSeconds: ptr.To(int32(testLease / time.Second)),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](1)},
	}
	h.create(lease)
	o := &oldReplica{renewing: true, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		tick := time.NewTicker(testRetry)
		defer tick.Stop()
		for {
			select {
			case <-o.stop:
				return
			case <-tick.C:
			}
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				var l coordinationv1.Lease
				if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: key.Namespace, Name: lease.Name}, &l); err != nil {
					return err
				}
				if ptr.Deref(l.Spec.HolderIdentity, "") != identity {
					return fmt.Errorf("the legacy Lease was taken from the old replica by %q while it renewed", ptr.Deref(l.Spec.HolderIdentity, ""))
				}
				t := metav1.NewMicroTime(time.Now())
				l.Spec.RenewTime = &t
				return h.c.Update(context.Background(), &l)
			})
			if err != nil {
				h.t.Errorf("old replica: %v", err)
				return
			}
			o.mu.Lock()
			o.renewals++
			o.mu.Unlock()
		}
	}()
	h.t.Cleanup(o.halt)
	return o
}

// halt stops renewing (the old replica is gone) and waits for it.
func (o *oldReplica) halt() {
	o.mu.Lock()
	if !o.renewing {
		o.mu.Unlock()
		return
	}
	o.renewing = false
	o.mu.Unlock()
	close(o.stop)
	<-o.done
}

func (o *oldReplica) state() (renewing bool, renewals int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.renewing, o.renewals
}

// A rolling upgrade from a release that kept the Lease in the feed's
// namespace: while a replica of that release holds and renews the legacy
// Lease, a new replica (with --legacy-leases) takes the feed's Lease in its
// own namespace but starts no pump; it starts one only once the old replica
// stopped renewing and the legacy Lease expired, and then holds both.
func TestLegacyLeaseHeldByAnOldReplicaKeepsThePumpOff(t *testing.T) {
	h := newHarness(t)
	h.secrets("pek")
	key := h.feed("pek")
	old := h.startOldReplica(key, "old-replica")

	// Every pump start checks that the old replica had stopped renewing.
	var early []string
	var mu sync.Mutex
	factory := func(ctx context.Context, p pumppod.RunParams) (pumppod.FeedRunner, error) {
		if renewing, n := old.state(); renewing {
			mu.Lock()
			early = append(early, fmt.Sprintf("%s started a pump while the old replica renewed (%d renewals)", p.Identity, n))
			mu.Unlock()
		}
		return h.runners.factory(ctx, p)
	}
	legacy := func(o *pumpserver.Options) { o.LegacyLeases = true }
	h.startReplicaWith("new-replica", factory, legacy)

	await.Eventually(t, "the new replica holds the feed's Lease in its namespace", waitLong, func() (bool, string) {
		l, err := h.lease(key)
		if err != nil {
			return false, err.Error()
		}
		return ptr.Deref(l.Spec.HolderIdentity, "") == "new-replica", ptr.Deref(l.Spec.HolderIdentity, "")
	})
	// Three Lease durations of renewals by the old replica: time enough
	// for the new one to have taken an unrenewed legacy Lease over.
	_, base := old.state()
	want := base + int(3*testLease/testRetry)
	await.Eventually(t, "the old replica renewing for three Lease durations", waitLong, func() (bool, string) {
		_, n := old.state()
		return n >= want, fmt.Sprintf("%d of %d renewals", n, want)
	})
	if n := len(h.runners.all()); n != 0 {
		t.Fatalf("%d pump(s) started while the old replica held the legacy Lease", n)
	}
	old.halt()

	h.runnerOf("new-replica", 0)
	h.waitReady(key)
	mu.Lock()
	for _, e := range early {
		t.Error(e)
	}
	mu.Unlock()
	var l coordinationv1.Lease
	if err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: key.Namespace, Name: pumppod.LegacyLeaseName(key.Name)}, &l); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(l.Spec.HolderIdentity, ""); got != "new-replica" {
		t.Errorf("legacy Lease held by %q, want the new replica (an old replica must keep waiting)", got)
	}
}
