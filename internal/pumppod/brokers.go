package pumppod

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// Whoever may edit a FlightFeed may change kafka.brokers without touching
// the SASL Secret; the pump would then hand the same username and password
// to hosts the Secret's owner never chose. That is allowed (a broker
// migration looks exactly like it) but never silent: status.kafkaCredentials
// keeps the brokers the Secret was last given to, and a change shows the
// KafkaBrokersChanged condition and a Warning Event naming the old and the
// new hosts. The record lives in the status, not in a pod's memory,
// because a spec change rolls the pump pods.

// ReasonKafkaBrokersChanged (Warning Event): the brokers changed and the
// SASL Secret stayed.
const ReasonKafkaBrokersChanged = string(v1alpha1.ConditionKafkaBrokersChanged)

// brokersMove is a change of brokers under the same SASL Secret.
type brokersMove struct {
	Secret   string
	From, To []string
}

func (m brokersMove) String() string {
	return fmt.Sprintf("kafka.brokers changed from %s to %s while kafka.sasl.secretRef stayed %s: its credentials now go to %s",
		strings.Join(m.From, ","), strings.Join(m.To, ","), m.Secret, strings.Join(m.To, ","))
}

// recordKafkaCredentials updates st's record of where the SASL credentials
// go for a feed running spec at generation, and sets KafkaBrokersChanged.
// It returns the move to announce when generation is the one that moved
// them and the record did not know it yet. No I/O; brokers_test.go has
// the table.
func recordKafkaCredentials(st *v1alpha1.FlightFeedStatus, spec *v1alpha1.FlightFeedSpec, generation int64, now time.Time) *brokersMove {
	setCond := func(s metav1.ConditionStatus, r v1alpha1.ConditionReason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(v1alpha1.ConditionKafkaBrokersChanged), Status: s,
			Reason: string(r), Message: truncate(msg, maxConditionMessage), ObservedGeneration: generation,
			LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))})
	}
	sasl := spec.Kafka.SASL
	if sasl == nil {
		st.KafkaCredentials = nil
		setCond(metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "no kafka.sasl credentials are sent")
		return nil
	}
	brokers := slices.Clone(spec.Kafka.Brokers)
	slices.Sort(brokers)
	brokers = slices.Compact(brokers)
	prev := st.KafkaCredentials
	var announce *brokersMove
	switch {
	case prev == nil || prev.SecretName != sasl.SecretRef.Name:
		// First record, or other credentials: nothing moved.
		st.KafkaCredentials = &v1alpha1.KafkaCredentialsStatus{SecretName: sasl.SecretRef.Name, Brokers: brokers}
	case !slices.Equal(prev.Brokers, brokers):
		st.KafkaCredentials = &v1alpha1.KafkaCredentialsStatus{SecretName: sasl.SecretRef.Name, Brokers: brokers,
			PreviousBrokers: prev.Brokers, ChangedGeneration: generation}
		announce = &brokersMove{Secret: sasl.SecretRef.Name, From: prev.Brokers, To: brokers}
	}
	rec := st.KafkaCredentials
	if rec.ChangedGeneration == generation && len(rec.PreviousBrokers) > 0 {
		setCond(metav1.ConditionTrue, v1alpha1.ReasonCredentialsMoved,
			brokersMove{Secret: rec.SecretName, From: rec.PreviousBrokers, To: rec.Brokers}.String()+
				fmt.Sprintf(" (generation %d); if that was not meant, restore kafka.brokers and rotate the credentials", generation))
		return announce
	}
	setCond(metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "kafka.sasl credentials go to "+strings.Join(rec.Brokers, ","))
	return announce
}
