package pumppod_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pumppod"
)

// gather returns the family name of reg, nil when it has none.
func gather(t *testing.T, reg *prometheus.Registry, name string) *dto.MetricFamily {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// A hostile mailbox that sends thousands of distinct TYPE/STYP codes must
// not create thousands of series: beyond a bound per feed each counts as
// OTHER, and nothing is lost from the totals.
func TestMessageTypeSeriesAreBoundedPerFeed(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := pumppod.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	obs := m.Observer(types.NamespacedName{Namespace: "ns", Name: "pek"})
	const sent = 3000
	for i := range sent {
		obs.MessageDone(fmt.Sprintf("T%d", i), fmt.Sprintf("S%d", i), "DEAD")
	}
	obs.MessageDone("T1", "S1", "DEAD")
	types, styps, total := map[string]bool{}, map[string]bool{}, 0.0
	mf := gather(t, reg, "flightfeed_messages_total")
	for _, s := range mf.GetMetric() {
		for _, l := range s.GetLabel() {
			switch l.GetName() {
			case "type":
				types[l.GetValue()] = true
			case "styp":
				styps[l.GetValue()] = true
			}
		}
		total += s.GetCounter().GetValue()
	}
	if len(types) > 51 || len(styps) > 51 || !types["OTHER"] || !styps["OTHER"] {
		t.Fatalf("%d type and %d styp label values for one feed (%d series)", len(types), len(styps), len(mf.GetMetric()))
	}
	if len(mf.GetMetric()) > 52 {
		t.Fatalf("%d series of flightfeed_messages_total for one feed", len(mf.GetMetric()))
	}
	if total != sent+1 {
		t.Fatalf("messages counted %v, want %d", total, sent+1)
	}
}

// flightfeed_kafka_clients_renewed_total is a counter: it adds what each
// report's pump renewed since the last report, keeps its value while no
// pump runs, and a new pump's count (from 0 again) adds to it.
func TestKafkaClientsRenewedIsACounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := pumppod.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "pek"}
	now := time.Now()
	value := func() float64 {
		t.Helper()
		mf := gather(t, reg, "flightfeed_kafka_clients_renewed_total")
		if mf == nil || mf.GetType() != dto.MetricType_COUNTER || len(mf.GetMetric()) != 1 {
			t.Fatalf("flightfeed_kafka_clients_renewed_total: %v", mf)
		}
		return mf.GetMetric()[0].GetCounter().GetValue()
	}
	for _, step := range []struct {
		running bool
		renewed int64
		want    float64
	}{{true, 0, 0}, {true, 2, 2}, {true, 3, 3}, {false, 0, 3}, {true, 1, 4}, {true, 1, 4}} {
		m.Report(key, step.running, feedrun.Status{KafkaClientsRenewed: step.renewed}, now)
		if got := value(); got != step.want {
			t.Fatalf("after a report of %d (running %v): %v, want %v", step.renewed, step.running, got, step.want)
		}
	}
	if mf := gather(t, reg, "flightfeed_kafka_clients_renewed"); mf != nil {
		t.Fatal("the gauge flightfeed_kafka_clients_renewed is still exported")
	}
}

// Each message made DEAD by a panic counts once.
func TestMessagePanicsAreCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := pumppod.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Observer(types.NamespacedName{Namespace: "ns", Name: "pek"}).MessagePanicked()
	mf := gather(t, reg, "flightfeed_message_panics_total")
	if mf == nil || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Fatalf("flightfeed_message_panics_total: %v", mf)
	}
}
