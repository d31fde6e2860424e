package pumppod

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flightfeed/flightfeed/internal/failpoint"
)

// holderPanics is flightfeed_pump_panics_total{where="lease-holder"} of
// the feed in reg.
func holderPanics(t *testing.T, reg *prometheus.Registry) float64 {
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
			if labelOf(m, "where") == whereLeaseHolder && labelOf(m, labelFeed) == "pek" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A Lease holder that panics is counted
// (where=lease-holder) and restarted within the retry period: it goes on
// renewing the Lease. One that panics at every renewal renews nothing and
// reports the Lease lost once the renew deadline has passed, so the pump
// stops as after failed renewals: never a leader without a Lease. Not
// parallel: the arming is the process's.
func TestLeaseHolderPanicIsRecovered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		panics int
	}{{"two panics", 2}, {"a panic at every renewal", 1 << 30}} {
		t.Run(tc.name, func(t *testing.T) {
			feed := types.NamespacedName{Namespace: "airport", Name: "pek"}
			key := types.NamespacedName{Namespace: "airport", Name: FeedLeaseName(feed)}
			timings := LeaseTimings{}.WithDefaults()
			clk := clocktesting.NewFakeClock(time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC))
			kube := fake.NewClientset()
			e := newLeaseElector(kube.CoordinationV1(), key, "replica-a", metav1.ObjectMeta{}, timings, clk)
			if ok, _, err := e.try(t.Context()); !ok || err != nil {
				t.Fatalf("take the Lease: %v %v", ok, err)
			}
			reg := prometheus.NewRegistry()
			m, err := NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			s := &feedSupervisor{key: feed, deps: &supervisorDeps{timings: timings, clock: clk, metrics: m}, log: logr.Discard()}
			defer failpoint.ArmPanic(failpoint.LeaseHold, tc.panics)()

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			held := make(chan error, 1)
			go func() { held <- s.holdLease(ctx, e) }()
			renewedAt := func() time.Time {
				l, err := kube.CoordinationV1().Leases(key.Namespace).Get(t.Context(), key.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return l.Spec.RenewTime.Time
			}
			first := renewedAt()
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				select {
				case err := <-held:
					if tc.panics == 2 {
						t.Fatalf("hold ended with %v", err)
					}
					if !errors.Is(err, errLeaseLost) || e.isLeading() || holderPanics(t, reg) < 2 {
						t.Fatalf("hold ended with %v, leading %v, %v panics counted", err, e.isLeading(), holderPanics(t, reg))
					}
					return
				default:
				}
				if tc.panics == 2 && holderPanics(t, reg) == 2 && renewedAt().After(first.Add(timings.RetryPeriod)) {
					cancel()
					if err := <-held; err != nil {
						t.Fatalf("hold ended with %v", err)
					}
					return
				}
				if clk.HasWaiters() {
					clk.Step(timings.RetryPeriod / 4)
				} else {
					time.Sleep(time.Millisecond)
				}
			}
			t.Fatalf("after 60 s: %v panics counted, Lease renewed at %s (taken %s)", holderPanics(t, reg), renewedAt(), first)
		})
	}
}
