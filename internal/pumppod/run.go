package pumppod

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/readapi"
	"github.com/flightfeed/flightfeed/internal/serving"
	"github.com/flightfeed/flightfeed/internal/verify"
	"github.com/flightfeed/flightfeed/internal/verify/rebuild"
)

// Defaults of Options.
const (
	DefaultMetricsAddr     = ":8080"
	DefaultProbeAddr       = ":8081"
	DefaultAPIAddr         = ":8082"
	DefaultShutdownTimeout = 30 * time.Second
	// EventSource is the reporting controller of FlightFeed Events.
	EventSource = "flightfeed-operator"
)

// Options configure a pump pod (`flightfeed pump --feed NS/NAME`).
type Options struct {
	// Kubeconfig is a kubeconfig file; empty means $KUBECONFIG, then the
	// in-cluster configuration, then ~/.kube/config.
	Kubeconfig string
	// RestConfig, when set, is used instead of Kubeconfig.
	RestConfig *rest.Config

	// MetricsAddr serves /metrics (Prometheus). "0" disables it. Default :8080.
	MetricsAddr string
	// InsecureMetrics serves /metrics over plain HTTP to anyone (for local
	// runs: `flightfeed pump --metrics-secure=false`). By default it is
	// HTTPS, and a scraper needs a bearer token made for the feed's
	// audience (feednames.Audience, as the read API's) whose user may
	// `get` the non-resource URL /metrics (TokenReview,
	// SubjectAccessReview); the secure endpoint needs Feed.
	InsecureMetrics bool
	// MetricsCertDir holds tls.crt and tls.key for /metrics, reloaded when
	// they change; without them a self-signed certificate is made at start.
	MetricsCertDir string
	// ProbeAddr serves /healthz and /readyz. "0" disables it. Default :8081.
	ProbeAddr string
	// APIAddr serves the read API over HTTPS, to bearer tokens allowed to
	// read the feed (see readapi.Access). "0" disables it. Default :8082.
	APIAddr string
	// APIMaxConcurrentRequests caps the read API requests served at once
	// (after authorization); one more is refused with 429 and Retry-After.
	// Default readapi.DefaultMaxConcurrentRequests (8).
	APIMaxConcurrentRequests int
	// APICertDir holds tls.crt and tls.key for the read API, reloaded when
	// they change; without them a self-signed certificate is made at start.
	APICertDir string
	// Timeouts bound reading requests and idle connections on the read
	// API and /metrics (zero: the defaults of readapi.Timeouts).
	Timeouts readapi.Timeouts
	// EnableHTTP2 offers HTTP/2 on the metrics and read API endpoints (off
	// by default: its stream handling had denial of service flaws).
	EnableHTTP2 bool

	// Identity names this replica in every feed's Lease and in
	// pipeline_lock; it must be unique among replicas. Default: $POD_NAME,
	// then the host name.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod time the per-feed
	// Leases (defaults 15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// StatusInterval between periodic status reports (default 5s).
	StatusInterval time.Duration
	// StatusFiguresInterval: fast-moving figures alone are written to a
	// feed's status at most this often (default 30s; see
	// SupervisorOptions.FiguresInterval).
	StatusFiguresInterval time.Duration
	// SecretResync is how often every feed's Secrets are read again (by
	// name, uncached; the operator neither lists nor watches Secrets): a
	// rotated Secret restarts the feed's pump within this period. Default
	// DefaultSecretResync (1m).
	SecretResync time.Duration
	// ShutdownTimeout bounds stopping the pumps and releasing the Leases
	// on exit (default 30s).
	ShutdownTimeout time.Duration
	// RestartBackoff and MaxRestartBackoff pace a failing or fenced
	// runner's restarts (default 1s doubling to 1m); FencedHolderSilence is
	// how long the pump that fenced a runner must stop renewing its epoch
	// before the runner takes the feed back (default 30s). See
	// SupervisorOptions.
	RestartBackoff, MaxRestartBackoff, FencedHolderSilence time.Duration

	// Factory builds a feed's runner (pump + dispatcher) on the replica
	// that leads the feed. Required.
	Factory RunnerFactory

	// Feed is the one FlightFeed this pump pod runs (`flightfeed pump
	// --feed NS/NAME`): the cache holds that FlightFeed alone and the
	// FlightFeedDays of its namespace, which is all the pod's Role lets it
	// read. Empty (test harnesses only): every FlightFeed of Namespaces.
	Feed types.NamespacedName
	// Namespaces limits the harness's pump to FlightFeeds in these
	// namespaces when Feed is empty; empty means every namespace.
	Namespaces []string

	// InCluster: the process runs in a pod of the cluster (`flightfeed pump
	// --in-pod`, which the operator renders), so a broker on loopback would
	// be the pod itself and is refused.
	InCluster bool

	// Log is the manager's logger (default: controller-runtime's global).
	Log logr.Logger
	// Registry receives the FlightFeed metrics (default: the registry the
	// manager's /metrics endpoint serves).
	Registry prometheus.Registerer
}

// DefaultIdentity is $POD_NAME, else the host name.
func DefaultIdentity() (string, error) {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("identity: no POD_NAME and no host name: %w", err)
	}
	return host, nil
}

// Run runs the pump pod until ctx ends: the feed's reconciler and
// supervisor, the metrics and probe endpoints and the read API. On the way
// out the pump is stopped, its last status written and its Lease released.
func Run(ctx context.Context, o Options) error {
	mgr, err := New(o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// New builds the manager Run starts (tests start it themselves).
func New(o Options) (manager.Manager, error) {
	if o.Factory == nil {
		return nil, errors.New("pump pod: a RunnerFactory is required")
	}
	timings := LeaseTimings{LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod}.WithDefaults()
	if err := timings.Validate(); err != nil {
		return nil, fmt.Errorf("pump pod: %w", err)
	}
	if o.SecretResync < 0 {
		return nil, fmt.Errorf("pump pod: the Secret resync period must be positive, got %s", o.SecretResync)
	}
	if o.Identity == "" {
		id, err := DefaultIdentity()
		if err != nil {
			return nil, err
		}
		o.Identity = id
	}
	if o.Log.GetSink() == nil {
		o.Log = ctrl.Log.WithName("flightfeed")
	}
	if orDefault(o.MetricsAddr, DefaultMetricsAddr) != "0" && !o.InsecureMetrics && o.Feed.Name == "" {
		return nil, errors.New("pump pod: the secure metrics endpoint needs the feed (its tokens are bound to the feed's audience)")
	}
	cfg, err := serving.RestConfig(o.RestConfig, o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("pump pod: %w", err)
	}
	// Every client of the pod records the API server's answers: /readyz
	// reads them instead of asking /version at every probe.
	activity := serving.NewAPIActivity(nil)
	cfg = activity.Wrap(cfg)
	scheme, err := serving.Scheme()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		Logger: o.Log,
		// The pump pod serves /metrics itself (readapi.MetricsServer):
		// bound to the feed's audience, with timeouts; controller-runtime's
		// server is off.
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: orDefault(o.ProbeAddr, DefaultProbeAddr),
		// Every replica reconciles every feed; each feed elects its own
		// pump through its own Lease.
		LeaderElection:          false,
		GracefulShutdownTimeout: ptr.To(shutdownTimeout(o.ShutdownTimeout)),
		Cache:                   cacheOptions(o.Feed, o.Namespaces),
		Client: client.Options{Cache: &client.CacheOptions{
			// Secrets and Leases are read one at a time from the API
			// server, never cached: caching would list and watch every
			// Secret and Lease of the cluster, which costs memory, widens
			// what a compromised process holds and needs RBAC the manager
			// does not have (Secrets: get only).
			DisableFor: []client.Object{&corev1.Secret{}, &coordinationv1.Lease{}},
		}},
		Controller: ctrlconfig.Controller{
			// Tests run several managers in one process.
			SkipNameValidation: ptr.To(true),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("pump pod: new manager: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("pump pod: kubernetes client: %w", err)
	}
	// The Lease renewals and the read API's token reviews each get a
	// client of their own, with its own rate limiter: callers of the read
	// API never make a renewal wait in this process (their new tokens are
	// bounded by readapi.Access at ReviewRate a second, and their client
	// at reviewQPS).
	leaseKube, err := ownClient(cfg, cfg.QPS, cfg.Burst)
	if err != nil {
		return nil, fmt.Errorf("pump pod: lease client: %w", err)
	}
	reviewKube, err := ownClient(cfg, reviewQPS, reviewBurst)
	if err != nil {
		return nil, fmt.Errorf("pump pod: token review client: %w", err)
	}
	reg := o.Registry
	if reg == nil {
		reg = crmetrics.Registry
	}
	metrics, err := NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("pump pod: register metrics: %w", err)
	}
	sup, err := NewSupervisors(SupervisorOptions{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		Leases:         leaseKube.CoordinationV1(),
		Recorder:       mgr.GetEventRecorder(EventSource),
		Factory:        o.Factory,
		Identity:       o.Identity,
		Lease:          timings,
		ReportInterval: o.StatusInterval,
		// Metrics get every report; etcd gets figures at most this often.
		FiguresInterval: o.StatusFiguresInterval,
		// Zero: the supervisors' defaults.
		RestartBackoff:      o.RestartBackoff,
		MaxRestartBackoff:   o.MaxRestartBackoff,
		FencedHolderSilence: o.FencedHolderSilence,
		Metrics:             metrics,
		Log:                 o.Log.WithName("supervisor"),
	})
	if err != nil {
		return nil, fmt.Errorf("pump pod: %w", err)
	}
	if err := mgr.Add(sup); err != nil {
		return nil, fmt.Errorf("pump pod: add supervisors: %w", err)
	}
	dir := NewFeedDirectory()
	rec := &FlightFeedReconciler{
		Client:       mgr.GetClient(),
		SecretReader: mgr.GetAPIReader(),
		SecretResync: o.SecretResync,
		Supervisors:  sup,
		Directory:    dir,
		InCluster:    o.InCluster,
	}
	if err := rec.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("pump pod: set up the reconciler: %w", err)
	}
	if err := mgr.AddHealthzCheck("leases", sup.LivenessCheck); err != nil {
		return nil, fmt.Errorf("pump pod: healthz: %w", err)
	}
	// Readiness is the manager's alone: the API server answers and the
	// informers synced. A feed's trouble (its database down, its pump
	// failing) is in the feed's conditions and metrics; were it here, one
	// database outage would make every replica unready and, with the
	// PodDisruptionBudget, block node drains.
	// The API server is reachable when it answered any client of the pod
	// within the renew deadline (the Lease alone is renewed, or watched,
	// every retry period); otherwise the probe asks /version.
	if err := mgr.AddReadyzCheck("apiserver", serving.APIServerAnswered(kube, activity, timings.RenewDeadline)); err != nil {
		return nil, fmt.Errorf("pump pod: readyz: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", cacheSynced(mgr)); err != nil {
		return nil, fmt.Errorf("pump pod: readyz: %w", err)
	}
	// One Access for the read API and /metrics: one cache, and one limit
	// of new tokens reviewed a second for the whole pod.
	access := readapi.NewAccess(reviewKube.AuthenticationV1().TokenReviews(), reviewKube.AuthorizationV1().SubjectAccessReviews(), nil)
	if addr := orDefault(o.MetricsAddr, DefaultMetricsAddr); addr != "0" {
		gatherer, ok := reg.(prometheus.Gatherer)
		if !ok {
			gatherer = crmetrics.Registry
		}
		if err := mgr.Add(&readapi.MetricsServer{Addr: addr, Feed: o.Feed, Insecure: o.InsecureMetrics, CertDir: o.MetricsCertDir, HTTP2: o.EnableHTTP2,
			Gatherer: gatherer, Access: access, Timeouts: o.Timeouts, Log: o.Log.WithName("metrics")}); err != nil {
			return nil, fmt.Errorf("pump pod: add metrics: %w", err)
		}
	}
	if addr := orDefault(o.APIAddr, DefaultAPIAddr); addr != "0" {
		api := readapi.NewReadAPI(dir, access, o.APIMaxConcurrentRequests,
			readapi.APIMetrics{Rejected: metrics.ReadAPIRejected(), Requests: metrics.ReadAPIRequests(), Duration: metrics.ReadAPIDuration()}, o.Log.WithName("read-api")).
			WithVerifier(func(ctx context.Context, feed *config.Feed, day, ranBy string) (verify.Record, verify.Report, error) {
				return rebuild.Verify(ctx, feed, day, ranBy, o.Log.WithName("verify").WithValues("flightfeed", feed.Namespace+"/"+feed.Name))
			})
		if err := mgr.Add(&readapi.APIServer{Addr: addr, API: api, CertDir: o.APICertDir, HTTP2: o.EnableHTTP2, Timeouts: o.Timeouts, Log: o.Log.WithName("read-api")}); err != nil {
			return nil, fmt.Errorf("pump pod: add read api: %w", err)
		}
	}
	return mgr, nil
}

// The token review client's limits: a review is up to two requests
// (TokenReview, SubjectAccessReview), readapi.Access admits ReviewRate a
// second.
const (
	reviewQPS   = 2 * readapi.ReviewRate
	reviewBurst = 2 * readapi.ReviewBurst
)

// ownClient is a clientset of cfg with a rate limiter of its own (qps <= 0:
// none, as cfg says).
func ownClient(cfg *rest.Config, qps float32, burst int) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(cfg)
	c.RateLimiter = nil
	c.QPS, c.Burst = qps, burst
	return kubernetes.NewForConfig(c)
}

// cacheOptions watches the one feed (and its namespace's FlightFeedDays),
// or the given namespaces, or all of them.
func cacheOptions(feed types.NamespacedName, namespaces []string) cache.Options {
	if feed.Name != "" {
		return cache.Options{
			DefaultNamespaces: map[string]cache.Config{feed.Namespace: {}},
			ByObject: map[client.Object]cache.ByObject{&v1alpha1.FlightFeed{}: {
				Field: fields.OneTermEqualSelector("metadata.name", feed.Name)}},
		}
	}
	if len(namespaces) == 0 {
		return cache.Options{}
	}
	ns := make(map[string]cache.Config, len(namespaces))
	for _, n := range namespaces {
		ns[n] = cache.Config{}
	}
	return cache.Options{DefaultNamespaces: ns}
}

// cacheSynced is ready once the informers have synced.
func cacheSynced(mgr manager.Manager) func(*http.Request) error {
	return func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informers not synced yet")
		}
		return nil
	}
}

// shutdownTimeout is d, or DefaultShutdownTimeout when d is not positive.
func shutdownTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultShutdownTimeout
	}
	return d
}
