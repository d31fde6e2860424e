package feedobjects

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
)

// PumpPodsStatus is status.pumpPods — the one part of a feed's status the
// operator writes — for the Deployment dep (nil: not made yet, waiting
// says why) on top of the previous one, with what of spec.pump was not
// rendered as written (adjusted).
func PumpPodsStatus(ff *v1alpha1.FlightFeed, dep *appsv1.Deployment, waiting string, adjusted []string) *v1alpha1.PumpPodsStatus {
	s := &v1alpha1.PumpPodsStatus{Deployment: feednames.Pump(ff.Name), Waiting: waiting, Adjusted: adjusted}
	if prev := ff.Status.PumpPods; prev != nil {
		s.Generation = prev.Generation
	}
	if dep == nil {
		s.Ready = "0/0"
		return s
	}
	want := ptr.Deref(dep.Spec.Replicas, 1)
	s.Replicas, s.ReadyReplicas, s.UpdatedReplicas = want, dep.Status.ReadyReplicas, dep.Status.UpdatedReplicas
	s.Ready = fmt.Sprintf("%d/%d", dep.Status.ReadyReplicas, want)
	if gen, ok := templateGeneration(dep); ok {
		s.ObservedGeneration = gen
		// Rolled out: the controller saw this template, every pod runs it
		// and no pod of an older one is left.
		if dep.Status.ObservedGeneration >= dep.Generation && dep.Status.UpdatedReplicas == want &&
			dep.Status.Replicas == want && dep.Status.AvailableReplicas == want {
			s.Generation = gen
		}
	}
	return s
}

func templateGeneration(dep *appsv1.Deployment) (int64, bool) {
	v, ok := dep.Spec.Template.Annotations[AnnotationGeneration]
	if !ok {
		return 0, false
	}
	var gen int64
	if _, err := fmt.Sscan(v, &gen); err != nil {
		return 0, false
	}
	return gen, true
}
