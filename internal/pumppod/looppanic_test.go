package pumppod_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// The status reporter and the Lease holder survive their own panics:
// each panic is counted in
// flightfeed_pump_panics_total with its where label, the replica keeps
// the Lease (renewed after the panics, no transition) and the reporter
// goes on reporting (a new generation is observed). Not parallel: the
// arming is the process's.
func TestReporterAndLeaseHolderPanicsAreRecovered(t *testing.T) {
	h := newHarness(t)
	h.secrets("pek")
	key := h.feed("pek")
	rep := h.startReplica("a")
	h.waitReady(key)
	before, err := h.lease(key)
	if err != nil {
		t.Fatal(err)
	}

	defer failpoint.ArmPanic(failpoint.StatusReport, 3)()
	defer failpoint.ArmPanic(failpoint.LeaseHold, 2)()
	panicsOf := func(where string) float64 {
		mf := gather(t, rep.registry, "flightfeed_pump_panics_total")
		for _, m := range mf.GetMetric() {
			if hasLabels(m, map[string]string{"feed": key.Name, "feed_namespace": key.Namespace, "where": where}) {
				return m.GetCounter().GetValue()
			}
		}
		return 0
	}
	await.Eventually(t, "the armed panics, counted", waitLong, func() (bool, string) {
		r, l := panicsOf("status-reporter"), panicsOf("lease-holder")
		return r == 3 && l == 2, fmt.Sprintf("status-reporter %v, lease-holder %v", r, l)
	})
	after, err := h.lease(key)
	if err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, "the Lease renewed after the panics", waitLong, func() (bool, string) {
		l, err := h.lease(key)
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.After(after.Spec.RenewTime.Time), l.Spec.RenewTime.String()
	})
	now, err := h.lease(key)
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(now.Spec.HolderIdentity, "") != "a" || ptr.Deref(now.Spec.LeaseTransitions, 0) != ptr.Deref(before.Spec.LeaseTransitions, 0) {
		t.Fatalf("the Lease moved: held by %q, %d transitions (was %d)", ptr.Deref(now.Spec.HolderIdentity, ""),
			ptr.Deref(now.Spec.LeaseTransitions, 0), ptr.Deref(before.Spec.LeaseTransitions, 0))
	}

	// The reporter still reports: a new generation becomes Ready.
	var ff unstructured.Unstructured
	ff.SetAPIVersion("flightfeed.aero/v1alpha1")
	ff.SetKind("FlightFeed")
	ff.SetNamespace(key.Namespace)
	ff.SetName(key.Name)
	if err := h.c.Patch(h.ctx(), &ff, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"mailbox":{"pollInterval":"150ms"}}}`))); err != nil {
		t.Fatal(err)
	}
	h.waitReady(key)
}
