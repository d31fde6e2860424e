// Package controllers is the FlightFeed operator's control loop. On every
// replica the FlightFeedReconciler validates each FlightFeed, resolves its
// Secrets into a config.Feed and hands it to the feed's supervisor. Each
// supervisor contends for its feed's own coordination.k8s.io Lease; the
// holder takes a fencing epoch in the feed's database, runs the feed's
// runner (pump + dispatcher, built by a RunnerFactory) and is the only
// writer of the feed's status, FlightFeedDays, Events and pump metrics.
// Losing the Lease cancels the runner at once; the epoch keeps a paused
// ex-holder from committing.
//
// The package imports the pump's Status type, never the other way round,
// and holds no pump logic: the runner is behind the FeedRunner seam.
package controllers

// RBAC of the manager, least privilege (config/rbac/role.yaml is generated
// from these markers).
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds/status,verbs=get;patch
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds/finalizers,verbs=update
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeddays,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeddays/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
