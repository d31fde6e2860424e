package pumppod_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/pumppod"
)

// One message with thousands of distinct unmapped tags must not create
// thousands of series: beyond a bound per feed they count as OTHER, and
// nothing is lost from the totals.
func TestIgnoredTagSeriesAreBoundedPerFeed(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := pumppod.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	obs := m.Observer(types.NamespacedName{Namespace: "ns", Name: "pek"})
	tags := map[string]int{}
	for i := range 5000 {
		tags[fmt.Sprintf("X%d", i)] = 1
	}
	obs.IgnoredTags(tags)
	obs.IgnoredTags(map[string]int{"X1": 1})
	series, total := ignoredSeries(t, reg)
	if series > 101 {
		t.Fatalf("%d series of flightfeed_ignored_tags_total for one feed", series)
	}
	if total != 5001 {
		t.Fatalf("ignored tags counted %v, want 5001", total)
	}
	// Another feed has a bound of its own.
	m.Observer(types.NamespacedName{Namespace: "ns", Name: "can"}).IgnoredTags(map[string]int{"ZZ": 1})
	if got, _ := ignoredSeries(t, reg); got != series+1 {
		t.Fatalf("%d series after another feed's tag, want %d", got, series+1)
	}
}

// ignoredSeries counts the series of flightfeed_ignored_tags_total and
// sums them.
func ignoredSeries(t *testing.T, reg *prometheus.Registry) (int, float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n, total := 0, 0.0
	for _, mf := range families {
		if mf.GetName() != "flightfeed_ignored_tags_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			n++
			total += s.GetCounter().GetValue()
		}
	}
	return n, total
}
