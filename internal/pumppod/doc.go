// Package pumppod is what runs inside a feed's pump pods (`flightfeed pump
// --feed NS/NAME`; package cli only parses the flags into Options). Run
// (run.go) assembles the pod: a controller-runtime manager whose cache holds
// that one FlightFeed, the feed's metrics, the reconciler and supervisor,
// the Lease timings, the /healthz and /readyz checks, and the read API and
// /metrics servers of package readapi on their own listeners. The
// FlightFeedReconciler validates the pod's FlightFeed, resolves its Secrets
// (under the pump's own ServiceAccount, which may get exactly the Secrets
// the feed names, and only those labelled flightfeed.aero/secret=true and
// naming the feed in flightfeed.aero/feeds are used; a kafka.sasl Secret
// must also allow every broker in flightfeed.aero/brokers, package
// secretconsent) into a config.Feed (ResolveFeed), and hands it to the feed's
// supervisor and the read API's directory. The supervisor contends for the
// feed's coordination.k8s.io Lease in the feed's namespace with the other
// pods of the feed; the holder opens the feed's database, takes a fencing
// epoch, runs the feed's runner (built by a RunnerFactory; the real one is
// feedrun's pump + dispatcher) and restarts it with backoff (package
// backoff) when it fails, and is the only writer of the feed's status
// (except status.pumpPods, the operator's), FlightFeedDays, Events and
// feed metrics. Losing the Lease cancels the runner at once; the epoch
// keeps a paused ex-holder from committing. The reconciler never writes
// status. A standby pod serves the read API and is Ready.
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
// feedrun to build the real runner), and readapi for the HTTP handlers,
// never the other way round, and holds no pump logic: the runner is behind
// the FeedRunner seam. The operator (package controllers) never imports it.
package pumppod

// RBAC of a pump pod. The operator renders it per feed (controllers'
// pumpRules: resourceNames for the feed's FlightFeed, Lease and Secrets);
// these markers generate config/rbac/pump_role.yaml, the same rights
// without the names, which the tests render to check the two agree. Secrets
// are only read one at a time by name (get), uncached: never listed or
// watched; a rotation is noticed by reading them again at every resync
// (--secret-resync-period).
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds,verbs=get;list;watch
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeddays,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeddays/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;update;watch
