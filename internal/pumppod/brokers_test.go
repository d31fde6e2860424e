package pumppod

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// A change of kafka.brokers that keeps the SASL Secret is announced once
// (an Event) and shown by KafkaBrokersChanged for the generation that made
// it, with the old and the new hosts; a new Secret, no SASL, or the same
// brokers in another order move nothing.
func TestRecordKafkaCredentials(t *testing.T) {
	spec := func(secret string, brokers ...string) *v1alpha1.FlightFeedSpec {
		s := &v1alpha1.FlightFeedSpec{Kafka: v1alpha1.KafkaSpec{Brokers: brokers}}
		if secret != "" {
			s.Kafka.SASL = &v1alpha1.KafkaSASL{Mechanism: "SCRAM-SHA-512", SecretRef: v1alpha1.SecretRef{Name: secret}}
		}
		return s
	}
	rec := func(secret string, prev []string, gen int64, brokers ...string) *v1alpha1.KafkaCredentialsStatus {
		return &v1alpha1.KafkaCredentialsStatus{SecretName: secret, Brokers: brokers, PreviousBrokers: prev, ChangedGeneration: gen}
	}
	for _, tc := range []struct {
		name     string
		prev     *v1alpha1.KafkaCredentialsStatus
		spec     *v1alpha1.FlightFeedSpec
		gen      int64
		want     *v1alpha1.KafkaCredentialsStatus
		announce string // "" none; else a substring of the Event
		cond     metav1.ConditionStatus
		condMsg  string
	}{
		{name: "first record", spec: spec("kafka", "b2:9092", "b1:9092"), gen: 1,
			want: rec("kafka", nil, 0, "b1:9092", "b2:9092"), cond: metav1.ConditionFalse, condMsg: "go to b1:9092,b2:9092"},
		{name: "same brokers, another order", prev: rec("kafka", nil, 0, "b1:9092", "b2:9092"), spec: spec("kafka", "b2:9092", "b1:9092"), gen: 2,
			want: rec("kafka", nil, 0, "b1:9092", "b2:9092"), cond: metav1.ConditionFalse},
		{name: "brokers moved, same Secret", prev: rec("kafka", nil, 0, "b1:9092", "b2:9092"), spec: spec("kafka", "evil.example:9093"), gen: 3,
			want:     rec("kafka", []string{"b1:9092", "b2:9092"}, 3, "evil.example:9093"),
			announce: "kafka.brokers changed from b1:9092,b2:9092 to evil.example:9093 while kafka.sasl.secretRef stayed kafka",
			cond:     metav1.ConditionTrue, condMsg: "from b1:9092,b2:9092 to evil.example:9093"},
		{name: "already recorded: shown, not announced again", prev: rec("kafka", []string{"b1:9092"}, 3, "evil.example:9093"),
			spec: spec("kafka", "evil.example:9093"), gen: 3,
			want: rec("kafka", []string{"b1:9092"}, 3, "evil.example:9093"), cond: metav1.ConditionTrue, condMsg: "its credentials now go to evil.example:9093 (generation 3)"},
		{name: "a later generation clears it", prev: rec("kafka", []string{"b1:9092"}, 3, "evil.example:9093"),
			spec: spec("kafka", "evil.example:9093"), gen: 4,
			want: rec("kafka", []string{"b1:9092"}, 3, "evil.example:9093"), cond: metav1.ConditionFalse},
		{name: "brokers and Secret changed together", prev: rec("kafka", nil, 0, "b1:9092"), spec: spec("other", "b9:9092"), gen: 5,
			want: rec("other", nil, 0, "b9:9092"), cond: metav1.ConditionFalse},
		{name: "SASL removed", prev: rec("kafka", nil, 0, "b1:9092"), spec: spec("", "b9:9092"), gen: 6,
			want: nil, cond: metav1.ConditionFalse, condMsg: "no kafka.sasl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &v1alpha1.FlightFeedStatus{KafkaCredentials: tc.prev}
			moved := recordKafkaCredentials(st, tc.spec, tc.gen, t0)
			got := st.KafkaCredentials
			if (got == nil) != (tc.want == nil) || got != nil && (got.SecretName != tc.want.SecretName || !slices.Equal(got.Brokers, tc.want.Brokers) ||
				!slices.Equal(got.PreviousBrokers, tc.want.PreviousBrokers) || got.ChangedGeneration != tc.want.ChangedGeneration) {
				t.Errorf("record %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.announce == "" && moved != nil:
				t.Errorf("announced %q", moved)
			case tc.announce != "" && (moved == nil || !strings.Contains(moved.String(), tc.announce)):
				t.Errorf("announced %v, want %q", moved, tc.announce)
			}
			c := meta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionKafkaBrokersChanged))
			if c == nil || c.Status != tc.cond || !strings.Contains(c.Message, tc.condMsg) || c.ObservedGeneration != tc.gen {
				t.Errorf("condition %+v, want %s with %q", c, tc.cond, tc.condMsg)
			}
		})
	}
}
