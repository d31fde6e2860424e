package config_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// Every length rule at its edge: the longest value accepted, one more
// refused naming the field, an empty one refused as required; and the
// backoff's ceiling may equal its floor.
func TestEveryLengthRuleAtItsEdge(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path  string
		max   int
		empty bool // an empty value is refused as required
		set   func(*v1alpha1.FlightFeedSpec, string)
	}{
		{path: "kafka.clientId", max: 128, set: func(s *v1alpha1.FlightFeedSpec, v string) { s.Kafka.ClientID = v }},
		{path: "mailbox.inbound.validStatus", max: 32, empty: true, set: func(s *v1alpha1.FlightFeedSpec, v string) { s.Mailbox.Inbound.ValidStatus = v }},
		{path: "requests.routingId", max: 64, empty: true, set: func(s *v1alpha1.FlightFeedSpec, v string) { s.Requests.RoutingID = v }},
		{path: "requests.sender", max: 32, empty: true, set: func(s *v1alpha1.FlightFeedSpec, v string) { s.Requests.Sender = v }},
		{path: "requests.receiver", max: 32, empty: true, set: func(s *v1alpha1.FlightFeedSpec, v string) { s.Requests.Receiver = v }},
		{path: "requests.referenceData.routingId", max: 64, set: func(s *v1alpha1.FlightFeedSpec, v string) { s.Requests.ReferenceData.RoutingID = v }},
	} {
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			at, other := errorsAt(t, c.path, func(s *v1alpha1.FlightFeedSpec) { c.set(s, strings.Repeat("A", c.max)) })
			if len(at)+len(other) > 0 {
				t.Fatalf("%d characters refused: %q %q", c.max, at, other)
			}
			at, other = errorsAt(t, c.path, func(s *v1alpha1.FlightFeedSpec) { c.set(s, strings.Repeat("A", c.max+1)) })
			if len(at) != 1 || len(other) > 0 {
				t.Fatalf("%d characters: errors %q, others %q; want one at %s", c.max+1, at, other, c.path)
			}
			if !c.empty {
				return
			}
			at, other = errorsAt(t, c.path, func(s *v1alpha1.FlightFeedSpec) { c.set(s, "") })
			if len(at) != 1 || len(other) > 0 || (!strings.Contains(at[0], "Required value") && !strings.Contains(at[0], "must be 1 to")) {
				t.Fatalf("empty: errors %q, others %q; want it required", at, other)
			}
		})
	}
}

func TestBackoffCeilingMayEqualItsFloor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		max  time.Duration
		want int
	}{{max: 2 * time.Second}, {max: 2*time.Second - time.Millisecond, want: 1}} {
		at, other := errorsAt(t, "pump.backoffMax", func(s *v1alpha1.FlightFeedSpec) {
			s.Pump.BackoffInitial, s.Pump.BackoffMax = &metav1.Duration{Duration: 2 * time.Second}, &metav1.Duration{Duration: c.max}
		})
		if len(at) != c.want || len(other) > 0 {
			t.Fatalf("backoffMax %s over backoffInitial 2s: errors %q, others %q", c.max, at, other)
		}
	}
}
