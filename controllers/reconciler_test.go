package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// The reconciler wakes for a feed's spec, labels and annotations, and for
// its creation and deletion, never for a status write (the pump pods
// write the status every few seconds).
func TestFeedChangedIgnoresStatusWrites(t *testing.T) {
	base := &v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Name: "pek", Namespace: "ops", Generation: 3, ResourceVersion: "10"}}
	edit := func(f func(*v1alpha1.FlightFeed)) *v1alpha1.FlightFeed {
		ff := base.DeepCopy()
		ff.ResourceVersion = "11"
		f(ff)
		return ff
	}
	for _, tc := range []struct {
		name string
		new  *v1alpha1.FlightFeed
		want bool
	}{
		{"status written", edit(func(ff *v1alpha1.FlightFeed) { ff.Status.ObservedGeneration = 3 }), false},
		{"spec changed", edit(func(ff *v1alpha1.FlightFeed) { ff.Generation = 4 }), true},
		{"label added", edit(func(ff *v1alpha1.FlightFeed) { ff.Labels = map[string]string{"team": "ops"} }), true},
		{"annotation added", edit(func(ff *v1alpha1.FlightFeed) { ff.Annotations = map[string]string{"note": "x"} }), true},
	} {
		if got := feedChanged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if !feedChanged.Create(event.CreateEvent{Object: base}) || !feedChanged.Delete(event.DeleteEvent{Object: base}) {
		t.Error("a feed made or deleted does not wake the reconciler")
	}
}
