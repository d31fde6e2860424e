// Package controllers is the FlightFeed operator's control loop. On every
// replica the FlightFeedReconciler validates each FlightFeed, resolves its
// Secrets into a config.Feed (ResolveFeed), hands it to the feed's
// supervisor and to the read API's directory, and holds a finalizer until
// no replica runs the feed any more. Each supervisor contends for its
// feed's own coordination.k8s.io Lease; the holder opens the feed's
// database, takes a fencing epoch, runs the feed's runner (built by a
// RunnerFactory; the real one is feedrun's pump + dispatcher) and restarts
// it with backoff (package backoff) when it fails, and is the only writer
// of the feed's status, FlightFeedDays, Events and feed metrics. Losing the
// Lease cancels the runner at once; the epoch keeps a paused ex-holder from
// committing. The reconciler never writes status.
//
// The Lease elector (lease.go) is our own rather than client-go's
// leaderelection: its clock is injectable, so the takeover, renewal and
// 403 tests run on a fake clock (client-go's elector always uses the real
// clock), and it keeps the Lease while the runner winds down and the last
// status is written, releasing it only then, for a clean hand-off. It
// logs every failed attempt with its error, so a refused Lease (RBAC 403)
// never loops silently.
//
// It imports feedrun and pump for the runner's status and notices (and
// feedrun to build the real runner), never the other way round, and holds
// no pump logic: the runner is behind the FeedRunner seam.
package controllers

// RBAC of the manager, least privilege (config/rbac/role.yaml is generated
// from these markers; the chart splits it into its ClusterRole, or one Role
// per watched namespace, and the Lease Role of its own namespace, "system"
// below). Secrets are only read one at a time by name (get), uncached, and
// used only when labelled flightfeed.aero/secret=true: never listed, which
// would hand over every Secret's data at once, and never watched, which
// would stream every change of every Secret in scope; a rotation is noticed
// by reading them again at every resync (--secret-resync-period).
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds/status,verbs=get;patch
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds/finalizers,verbs=update
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeddays,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeddays/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update;delete,namespace=system
