package pumppod_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/pumppod"
)

// A snapshot's flags are counted by flag, a failed trace write by feed
// (processing rules R5.6), SEQN regressions by feed (R9); a label that is no flag
// cannot grow the series.
func TestSnapshotFlagsAndTraceLogErrorsAreCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := pumppod.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	obs := m.Observer(types.NamespacedName{Namespace: "ns", Name: "pek"})
	for _, f := range []string{"RECS_DROP", "RECS_DROP", "OUT_OF_ORDER", "not a flag <x>"} {
		obs.SnapshotFlag(f)
	}
	obs.TraceLogFailed()
	obs.SeqnRegression()
	obs.SeqnRegression()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		for _, s := range mf.GetMetric() {
			switch mf.GetName() {
			case "flightfeed_snapshot_flags_total":
				for _, l := range s.GetLabel() {
					if l.GetName() == "flag" {
						got[l.GetValue()] = s.GetCounter().GetValue()
					}
				}
			case "flightfeed_trace_log_errors_total":
				got["trace log errors"] = s.GetCounter().GetValue()
			case "flightfeed_seqn_regressions_total":
				got["SEQN regressions"] = s.GetCounter().GetValue()
			}
		}
	}
	want := map[string]float64{"RECS_DROP": 2, "OUT_OF_ORDER": 1, "OTHER": 1, "trace log errors": 1, "SEQN regressions": 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("series (-want +got):\n%s", diff)
	}
}
