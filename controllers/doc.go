// Package controllers holds the FlightFeed reconciler: it validates each
// FlightFeed, resolves its Secrets, runs a Lease-elected pump per feed and
// writes the feed's status. It imports the pump, never the other way round.
package controllers

// RBAC the manager needs; the reconciler grows into these.
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
