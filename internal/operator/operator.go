package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flightfeed/flightfeed/controllers"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/feedobjects"
	"github.com/flightfeed/flightfeed/internal/scrapertoken"
	"github.com/flightfeed/flightfeed/internal/serving"
)

// Defaults of Options.
const (
	DefaultMetricsAddr = ":8080"
	DefaultProbeAddr   = ":8081"
	// LeaderElectionID is the Lease, in the operator's namespace, its
	// replicas elect on: one reconciles, the others stand by.
	LeaderElectionID = "flightfeed-operator"
)

// Options configure the operator (`flightfeed manager`).
type Options struct {
	// Kubeconfig is a kubeconfig file; empty means $KUBECONFIG, then the
	// in-cluster configuration, then ~/.kube/config. RestConfig, when set,
	// is used instead.
	Kubeconfig string
	RestConfig *rest.Config

	// MetricsAddr serves /metrics ("0" disables; default :8080), over
	// HTTPS to bearer tokens allowed to get /metrics unless
	// InsecureMetrics; MetricsCertDir holds tls.crt and tls.key (default a
	// self-signed certificate). ProbeAddr serves /healthz and /readyz
	// (default :8081). EnableHTTP2 offers HTTP/2 on metrics.
	MetricsAddr     string
	InsecureMetrics bool
	MetricsCertDir  string
	ProbeAddr       string
	EnableHTTP2     bool

	// LeaderElection makes one replica reconcile at a time (the Lease
	// LeaderElectionID in Namespace). Off for a single local process.
	LeaderElection bool
	// Namespace is the operator's own: its leader election Lease is there,
	// and releases that ran the pumps inside the operator kept every
	// feed's Lease there. Default $POD_NAMESPACE, else "default".
	Namespace string
	// Identity names this replica in its leader election (default
	// $POD_NAME, else the host name); LeaseDuration, RenewDeadline and
	// RetryPeriod time it (controller-runtime's defaults when zero).
	Identity                                  string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// Namespaces limits the operator to FlightFeeds in these namespaces;
	// empty means every namespace.
	Namespaces []string

	// Pump completes every pump Deployment (image, resources, placement,
	// flags, NetworkPolicy).
	Pump feedobjects.PumpDefaults
	// SecretGrant and AuthDelegator: see controllers.FlightFeedReconciler.
	SecretGrant   *controllers.SecretGrant
	AuthDelegator string

	// ScraperToken, when its Secret is set, keeps the metrics scraper's
	// bearer token for the operator's own /metrics in that Secret of the
	// operator's namespace: a short-lived token of its ServiceAccount,
	// renewed before it expires (package scrapertoken). Client, Namespace
	// and Log are filled in. Its ServiceAccount and TTL, when set, also
	// make each feed's ServiceMonitor's token (controllers.ScrapeTokens),
	// for that feed's audience alone.
	ScraperToken scrapertoken.Keeper
	// ScrapeTokenWriter: see controllers.ScrapeTokens.Writer.
	ScrapeTokenWriter *controllers.SecretGrant

	// Log is the manager's logger (default: controller-runtime's global).
	Log logr.Logger
}

// Run runs the operator until ctx ends.
func Run(ctx context.Context, o Options) error {
	mgr, err := New(o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// New builds the manager Run starts (tests start it themselves).
func New(o Options) (manager.Manager, error) {
	if o.Pump.Image == "" {
		return nil, errors.New("operator: the pump image is required (--pump-image or the pump defaults file)")
	}
	if o.Log.GetSink() == nil {
		o.Log = ctrl.Log.WithName("flightfeed-operator")
	}
	if o.Namespace == "" {
		o.Namespace = os.Getenv("POD_NAMESPACE")
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	cfg, err := serving.RestConfig(o.RestConfig, o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	scheme, err := serving.Scheme()
	if err != nil {
		return nil, err
	}
	metricsAddr := o.MetricsAddr
	if metricsAddr == "" {
		metricsAddr = DefaultMetricsAddr
	}
	probeAddr := o.ProbeAddr
	if probeAddr == "" {
		probeAddr = DefaultProbeAddr
	}
	var lock resourcelock.Interface
	if o.LeaderElection {
		if lock, err = electionLock(cfg, o); err != nil {
			return nil, err
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                              scheme,
		Logger:                              o.Log,
		Metrics:                             serving.MetricsOptions(metricsAddr, o.InsecureMetrics, o.MetricsCertDir, o.EnableHTTP2),
		HealthProbeBindAddress:              probeAddr,
		LeaderElection:                      o.LeaderElection,
		LeaderElectionID:                    LeaderElectionID,
		LeaderElectionNamespace:             o.Namespace,
		LeaderElectionResourceLockInterface: lock,
		LeaseDuration:                       durationOrNil(o.LeaseDuration),
		RenewDeadline:                       durationOrNil(o.RenewDeadline),
		RetryPeriod:                         durationOrNil(o.RetryPeriod),
		// Hand the leadership over at once on a clean exit.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(15 * time.Second),
		Cache:                         cacheOptions(o.Namespaces),
		Client: client.Options{Cache: &client.CacheOptions{
			// Leases are read one at a time, never cached (every Lease of
			// the cluster would be); so are Secrets (the few the operator
			// reads — the feeds' DSN hosts for their NetworkPolicies, its own
			// scrape token Secret — by name, never listed or watched).
			DisableFor: []client.Object{&coordinationv1.Lease{}, &corev1.Secret{}},
		}},
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("operator: new manager: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("operator: kubernetes client: %w", err)
	}
	rec := &controllers.FlightFeedReconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Defaults:          o.Pump,
		OperatorNamespace: o.Namespace,
		SecretGrant:       o.SecretGrant,
		AuthDelegator:     o.AuthDelegator,
		ScrapeTokens:      scrapeTokens(kube, o),
	}
	if err := rec.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("operator: set up the reconciler: %w", err)
	}
	if o.ScraperToken.Secret != "" {
		k := o.ScraperToken
		k.Client, k.Namespace, k.Log = kube, o.Namespace, o.Log.WithName("scraper-token")
		// The API server's audience alone: the operator's /metrics. The
		// pump pods' ServiceMonitors get tokens of their own feed's
		// audience (controllers.ScrapeTokens), so a token sent to the
		// operator is good nowhere else, and one sent to a pump pod only
		// there.
		k.Audiences = nil
		if err := k.Validate(); err != nil {
			return nil, fmt.Errorf("operator: %w", err)
		}
		if err := mgr.Add(&k); err != nil {
			return nil, fmt.Errorf("operator: scraper token: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("ping", func(*http.Request) error { return nil }); err != nil {
		return nil, fmt.Errorf("operator: healthz: %w", err)
	}
	if err := mgr.AddReadyzCheck("apiserver", serving.APIServerReachable(kube)); err != nil {
		return nil, fmt.Errorf("operator: readyz: %w", err)
	}
	return mgr, nil
}

// scrapeTokens makes the feeds' ServiceMonitors' tokens as the chart's
// scraper ServiceAccount (--scraper-service-account, in the operator's
// namespace), one feed's audience each; nil without a scraper.
func scrapeTokens(kube kubernetes.Interface, o Options) *controllers.ScrapeTokens {
	sa := o.ScraperToken.ServiceAccount
	if sa == "" {
		return nil
	}
	return &controllers.ScrapeTokens{
		TTL:    o.ScraperToken.TTL,
		Writer: o.ScrapeTokenWriter,
		Mint: func(ctx context.Context, audience string, ttl time.Duration) (string, time.Time, error) {
			tr, err := kube.CoreV1().ServiceAccounts(o.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To(int64(ttl / time.Second))},
			}, metav1.CreateOptions{})
			if err != nil {
				return "", time.Time{}, fmt.Errorf("request a token of ServiceAccount %s/%s: %w", o.Namespace, sa, err)
			}
			return tr.Status.Token, tr.Status.ExpirationTimestamp.UTC(), nil
		},
	}
}

// electionLock is the operator's leader election Lease under this
// replica's identity (controller-runtime would name it by host name and a
// random suffix).
func electionLock(cfg *rest.Config, o Options) (resourcelock.Interface, error) {
	id := o.Identity
	if id == "" {
		id = os.Getenv("POD_NAME")
	}
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("operator: identity: no POD_NAME and no host name: %w", err)
		}
		id = host
	}
	kube, err := kubernetes.NewForConfig(rest.AddUserAgent(cfg, "flightfeed-operator-leader-election"))
	if err != nil {
		return nil, fmt.Errorf("operator: leader election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.Namespace, LeaderElectionID,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return nil, fmt.Errorf("operator: leader election lock: %w", err)
	}
	return lock, nil
}

func durationOrNil(d time.Duration) *time.Duration {
	if d <= 0 {
		return nil
	}
	return &d
}

// cacheOptions caches FlightFeeds (in the given namespaces, or all) and,
// of the kinds the operator owns, only the objects it made (labelled
// feednames.LabelManagedBy): its memory grows with the feeds, not with the
// cluster.
func cacheOptions(namespaces []string) cache.Options {
	owned := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{feednames.LabelManagedBy: feednames.ManagedBy})}
	o := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&appsv1.Deployment{}:            owned,
		&corev1.Service{}:               owned,
		&corev1.ServiceAccount{}:        owned,
		&rbacv1.Role{}:                  owned,
		&rbacv1.RoleBinding{}:           owned,
		&policyv1.PodDisruptionBudget{}: owned,
		&networkingv1.NetworkPolicy{}:   owned,
	}}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
		for _, n := range namespaces {
			o.DefaultNamespaces[n] = cache.Config{}
		}
	}
	return o
}
