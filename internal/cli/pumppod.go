package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/readapi"
)

// podOptions are the flags of `flightfeed pump --feed NS/NAME`.
type podOptions struct {
	kubeconfig                                *string
	metricsAddr, probeAddr, apiAddr           *string
	metricsSecure                             *bool
	metricsCertDir, apiCertDir                *string
	apiMaxConcurrent                          *int
	enableHTTP2                               *bool
	leaseDuration, renewDeadline, retryPeriod *time.Duration
	statusInterval, figuresInterval           *time.Duration
	secretResync                              *time.Duration
	inPod                                     *bool
}

// podFlagNames are the flags only --feed uses.
var podFlagNames = []string{"kubeconfig", "metrics-bind-address", "metrics-secure", "metrics-cert-dir",
	"health-probe-bind-address", "api-bind-address", "api-max-concurrent-requests", "api-cert-dir", "enable-http2",
	"lease-duration", "renew-deadline", "retry-period", "status-interval", "status-figures-interval", "secret-resync-period", "in-pod"}

func podFlags(cmd *cobra.Command) *podOptions {
	f := cmd.Flags()
	return &podOptions{
		kubeconfig:       f.String("kubeconfig", "", "with --feed: kubeconfig file (default: $KUBECONFIG, then in-cluster)"),
		metricsAddr:      f.String("metrics-bind-address", ":8080", "with --feed: address of the Prometheus metrics endpoint (0 disables)"),
		metricsSecure:    f.Bool("metrics-secure", true, "with --feed: serve metrics over HTTPS to bearer tokens allowed to get /metrics; false serves plain HTTP to anyone (local runs only)"),
		metricsCertDir:   f.String("metrics-cert-dir", "", "with --feed: folder with tls.crt and tls.key for the metrics endpoint, reloaded on change (default: a self-signed certificate made at start)"),
		probeAddr:        f.String("health-probe-bind-address", ":8081", "with --feed: address of /healthz and /readyz (0 disables)"),
		apiAddr:          f.String("api-bind-address", ":8082", "with --feed: address of the feed's read API, HTTPS with bearer tokens (0 disables)"),
		apiMaxConcurrent: f.Int("api-max-concurrent-requests", readapi.DefaultMaxConcurrentRequests, "with --feed: read API requests served at once (after authorization); more are refused with 429 and Retry-After"),
		apiCertDir:       f.String("api-cert-dir", "", "with --feed: folder with tls.crt and tls.key for the read API, reloaded on change (default: a self-signed certificate made at start)"),
		enableHTTP2:      f.Bool("enable-http2", false, "with --feed: offer HTTP/2 on the metrics and read API endpoints"),
		leaseDuration:    f.Duration("lease-duration", 15*time.Second, "with --feed: how long the feed's Lease is valid without renewal"),
		renewDeadline:    f.Duration("renew-deadline", 10*time.Second, "with --feed: how long the leader keeps trying to renew before it stops its pump"),
		retryPeriod:      f.Duration("retry-period", 2*time.Second, "with --feed: how often Lease acquisition and renewal are tried"),
		statusInterval:   f.Duration("status-interval", 5*time.Second, "with --feed: period of the status reports"),
		figuresInterval: f.Duration("status-figures-interval", 30*time.Second,
			"with --feed: write fast-moving figures (counts, rates, lag) to the feed's status at most this often; condition changes are written at once"),
		secretResync: f.Duration("secret-resync-period", pumppod.DefaultSecretResync,
			"with --feed: how often the feed's Secrets are read again (by name): a rotated Secret restarts the pump within this period"),
		inPod: f.Bool("in-pod", false, "with --feed: this pump runs in a pod of the cluster (the operator sets it), whose loopback is the pod itself: kafka.brokers on loopback are refused"),
	}
}

// changed names a --feed-only flag given without --feed ("" when none).
func (o *podOptions) changed(cmd *cobra.Command) string {
	for _, n := range podFlagNames {
		if cmd.Flags().Changed(n) {
			return n
		}
	}
	return ""
}

func (o *podOptions) run(cmd *cobra.Command, key types.NamespacedName, identity string) error {
	if *o.apiMaxConcurrent < 1 {
		return usageError{fmt.Errorf("--api-max-concurrent-requests %d: must be at least 1", *o.apiMaxConcurrent)}
	}
	log := newLogger(cmd).WithValues("flightfeed", key.String())
	logf.SetLogger(log)
	if identity == "" {
		identity = hostIdentity()
	}
	return pumppod.Run(cmd.Context(), pumppod.Options{
		Feed: key, Kubeconfig: *o.kubeconfig, MetricsAddr: *o.metricsAddr, ProbeAddr: *o.probeAddr, APIAddr: *o.apiAddr,
		APIMaxConcurrentRequests: *o.apiMaxConcurrent, InsecureMetrics: !*o.metricsSecure, MetricsCertDir: *o.metricsCertDir,
		APICertDir: *o.apiCertDir, EnableHTTP2: *o.enableHTTP2, Identity: identity,
		LeaseDuration: *o.leaseDuration, RenewDeadline: *o.renewDeadline, RetryPeriod: *o.retryPeriod,
		StatusInterval: *o.statusInterval, StatusFiguresInterval: *o.figuresInterval, SecretResync: *o.secretResync,
		InCluster: *o.inPod, Log: log, Factory: pumppod.StartFeed,
	})
}
