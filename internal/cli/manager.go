package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/controllers"
	"github.com/flightfeed/flightfeed/internal/operator"
)

func newManagerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the Kubernetes operator (every FlightFeed, Lease-elected pumps, status, read API)",
		Long: `manager reconciles every FlightFeed on every replica. Per feed, the replica that
holds the feed's Lease takes a fencing epoch in the feed's database and runs its
pump and Kafka dispatcher; it alone writes the feed's status and FlightFeedDay
objects. Every replica serves metrics, probes and the read API.`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	kubeconfig := f.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then in-cluster)")
	metricsAddr := f.String("metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables)")
	metricsSecure := f.Bool("metrics-secure", true, "serve metrics over HTTPS to bearer tokens allowed to get /metrics; false serves plain HTTP to anyone (local runs only)")
	metricsCertDir := f.String("metrics-cert-dir", "", "folder with tls.crt and tls.key for the metrics endpoint, reloaded on change (default: a self-signed certificate made at start)")
	probeAddr := f.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz (0 disables)")
	apiAddr := f.String("api-bind-address", ":8082", "address of the read API, HTTPS with bearer tokens (0 disables)")
	apiMaxConcurrent := f.Int("api-max-concurrent-requests", operator.DefaultMaxConcurrentRequests,
		"read API requests served at once (after authorization); more are refused with 429 and Retry-After")
	apiCertDir := f.String("api-cert-dir", "", "folder with tls.crt and tls.key for the read API, reloaded on change (default: a self-signed certificate made at start)")
	enableHTTP2 := f.Bool("enable-http2", false, "offer HTTP/2 on the metrics and read API endpoints")
	identity := f.String("identity", "", "identity in Leases and the database writer lock (default: $POD_NAME, else the host name)")
	leaseDuration := f.Duration("lease-duration", 15*time.Second, "how long a feed's Lease is valid without renewal")
	renewDeadline := f.Duration("renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it stops its pump")
	retryPeriod := f.Duration("retry-period", 2*time.Second, "how often Lease acquisition and renewal are tried")
	statusInterval := f.Duration("status-interval", 5*time.Second, "period of the status reports")
	figuresInterval := f.Duration("status-figures-interval", 30*time.Second,
		"write fast-moving figures (counts, rates, lag) to a feed's status at most this often; condition changes are written at once")
	secretResync := f.Duration("secret-resync-period", controllers.DefaultSecretResync,
		"how often each feed's Secrets are read again (by name; Secrets are never listed or watched): a rotated Secret restarts the feed's pump within this period")
	namespaces := f.StringSlice("namespaces", nil, "watch only these namespaces (default: all)")
	leaseNamespace := f.String("lease-namespace", "", "namespace of every feed's Lease, the manager's own (default: $POD_NAMESPACE, else default)")
	legacyLeases := f.Bool("legacy-leases", false,
		"also take each feed's Lease in the feed's namespace, where releases before the namespaced Leases kept it, so that no replica of such a release pumps at the same time (upgrades from them)")
	logFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *apiMaxConcurrent < 1 {
			return usageError{fmt.Errorf("--api-max-concurrent-requests %d: must be at least 1", *apiMaxConcurrent)}
		}
		log := newLogger(cmd)
		logf.SetLogger(log)
		id := *identity
		if id == "" {
			id = hostIdentity()
		}
		return operator.Run(cmd.Context(), operator.Options{
			Kubeconfig: *kubeconfig, MetricsAddr: *metricsAddr, ProbeAddr: *probeAddr, APIAddr: *apiAddr, APIMaxConcurrentRequests: *apiMaxConcurrent,
			InsecureMetrics: !*metricsSecure, MetricsCertDir: *metricsCertDir, APICertDir: *apiCertDir, EnableHTTP2: *enableHTTP2,
			Identity: id, LeaseDuration: *leaseDuration, RenewDeadline: *renewDeadline, RetryPeriod: *retryPeriod,
			StatusInterval: *statusInterval, StatusFiguresInterval: *figuresInterval, Namespaces: *namespaces, Log: log,
			LeaseNamespace: *leaseNamespace, LegacyLeases: *legacyLeases, SecretResync: *secretResync,
			Factory: controllers.StartFeed,
		})
	}
	return cmd
}
