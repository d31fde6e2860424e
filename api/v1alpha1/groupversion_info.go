// Package v1alpha1 contains the FlightFeed API: the FlightFeed custom
// resource (one mailbox + database + topics, pumped by one elected replica)
// with its status and condition vocabulary, and FlightFeedDay, the read-only
// mirror of one operation day of a feed's snapshot ledger. It holds types
// and their schema markers only: defaulting and semantic validation live in
// internal/config so the resource and the --config file share them.
//
// +kubebuilder:object:generate=true
// +groupName=flightfeed.aero
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "flightfeed.aero", Version: "v1alpha1"}

	// SchemeBuilder registers the API types with a runtime scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the API types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &FlightFeed{}, &FlightFeedList{}, &FlightFeedDay{}, &FlightFeedDayList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
