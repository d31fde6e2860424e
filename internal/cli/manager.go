package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/controllers"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/feedobjects"
	"github.com/flightfeed/flightfeed/internal/operator"
	"github.com/flightfeed/flightfeed/internal/scrapertoken"
)

func newManagerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the Kubernetes operator: each FlightFeed becomes pump pods of its own",
		Long: `manager is the control plane. For each FlightFeed it creates and owns, in the
feed's namespace, a Deployment <name>-pump whose pods run
'flightfeed pump --feed NS/NAME', their ServiceAccount, Role and RoleBinding
(the Secrets the feed names, nothing else), a PodDisruptionBudget, the read
API's Service and, when enabled, a NetworkPolicy; it reports the pods in
status.pumpPods. It connects to no mailbox, database or broker: the pump
pods do. Its replicas elect one leader (--leader-elect).`,
		Example: `  # against the cluster of the current kubeconfig context, one local process
  flightfeed manager --pump-image registry.example.com/flightfeed:1.4.0 --metrics-secure=false`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	kubeconfig := f.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then in-cluster)")
	metricsAddr := f.String("metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables)")
	metricsSecure := f.Bool("metrics-secure", true, "serve metrics over HTTPS to bearer tokens allowed to get /metrics; false serves plain HTTP to anyone (local runs only)")
	metricsCertDir := f.String("metrics-cert-dir", "", "folder with tls.crt and tls.key for the metrics endpoint, reloaded on change (default: a self-signed certificate made at start)")
	probeAddr := f.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz (0 disables)")
	enableHTTP2 := f.Bool("enable-http2", false, "offer HTTP/2 on the metrics endpoint")
	identity := f.String("identity", "", "identity in the operator's leader election (default: $POD_NAME, else the host name)")
	leaderElect := f.Bool("leader-elect", false, "elect one active replica on the Lease flightfeed-operator in the operator's namespace (on in the chart)")
	leaseDuration := f.Duration("lease-duration", 15*time.Second, "how long the operator's leader election Lease is valid without renewal")
	renewDeadline := f.Duration("renew-deadline", 10*time.Second, "how long the operator's leader keeps trying to renew")
	retryPeriod := f.Duration("retry-period", 2*time.Second, "how often the operator's leader election is tried")
	namespaces := f.StringSlice("namespaces", nil, "watch only these namespaces (default: all)")
	namespace := f.String("namespace", "", "the operator's own namespace (default: $POD_NAMESPACE, else default)")
	pumpImage := f.String("pump-image", "", "image of the pump pods: the operator's own (overrides the pump defaults file)")
	pumpDefaults := f.String("pump-defaults", "", "YAML file of the pump pods' defaults (image, resources, placement, flags, NetworkPolicy; the chart's pump.* values)")
	secretReader := f.String("secret-reader-clusterrole", "", "ClusterRole granting get on Secrets that the operator binds itself to in each namespace holding a FlightFeed, so it may grant a feed's pump its named Secrets (empty: the operator holds that right already)")
	serviceAccount := f.String("service-account", "", "the operator's own ServiceAccount, NAMESPACE/NAME, bound to --secret-reader-clusterrole (default: $POD_NAMESPACE/$SERVICE_ACCOUNT)")
	authDelegator := f.String("auth-delegator-binding", "", "ClusterRoleBinding to system:auth-delegator, made by the install, whose subjects the operator keeps equal to the pump ServiceAccounts (they authenticate read API and metrics callers); the operator never creates it; empty: none")
	scraperSecret := f.String("scraper-token-secret", "", "Secret of the operator's namespace to keep filled (key token) with a short-lived token of --scraper-service-account, the metrics scraper's bearer token (empty: none)")
	scraperSA := f.String("scraper-service-account", "", "ServiceAccount of the operator's namespace whose tokens --scraper-token-secret holds")
	tokenWriter := f.String("scrape-token-writer-clusterrole", "", "ClusterRole granting create on Secrets and get/update of the Secret "+feednames.PumpScrapeTokens+" that the operator binds itself to in each namespace holding a FlightFeed, to keep the feeds' ServiceMonitors' tokens there (empty: the operator holds that right already)")
	scraperTTL := f.Duration("scraper-token-ttl", scrapertoken.DefaultTTL, "lifetime of each scraper token; a new one is written when a third of it is left (at least 10m)")
	logFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		log := newLogger(cmd)
		logf.SetLogger(log)
		if (*scraperSecret == "") != (*scraperSA == "") {
			return usageError{errors.New("--scraper-token-secret and --scraper-service-account go together: the Secret holds that ServiceAccount's tokens")}
		}
		if *scraperSecret != "" && *scraperTTL < scrapertoken.MinTTL {
			return usageError{fmt.Errorf("--scraper-token-ttl %s: the API server issues tokens of at least %s", *scraperTTL, scrapertoken.MinTTL)}
		}
		var defaults feedobjects.PumpDefaults
		if *pumpDefaults != "" {
			d, err := loadPumpDefaults(*pumpDefaults)
			if err != nil {
				return usageError{err}
			}
			defaults = d
		}
		if *pumpImage != "" {
			defaults.Image = *pumpImage
		}
		if defaults.Image == "" {
			return usageError{errors.New("the pump image is required: --pump-image or image in --pump-defaults")}
		}
		var grant, writer *controllers.SecretGrant
		for _, g := range []struct {
			role string
			into **controllers.SecretGrant
		}{{*secretReader, &grant}, {*tokenWriter, &writer}} {
			if g.role == "" {
				continue
			}
			sa, err := operatorServiceAccount(*serviceAccount)
			if err != nil {
				return usageError{err}
			}
			*g.into = &controllers.SecretGrant{ClusterRole: g.role, ServiceAccount: sa, BindingName: g.role}
		}
		if *tokenWriter != "" && *scraperSA == "" {
			return usageError{errors.New("--scrape-token-writer-clusterrole needs --scraper-service-account: the feeds' tokens are that ServiceAccount's")}
		}
		return operator.Run(cmd.Context(), operator.Options{
			Kubeconfig: *kubeconfig, MetricsAddr: *metricsAddr, ProbeAddr: *probeAddr,
			InsecureMetrics: !*metricsSecure, MetricsCertDir: *metricsCertDir, EnableHTTP2: *enableHTTP2,
			LeaderElection: *leaderElect, Identity: *identity, LeaseDuration: *leaseDuration, RenewDeadline: *renewDeadline,
			RetryPeriod: *retryPeriod, Namespace: *namespace, Namespaces: *namespaces, Pump: defaults,
			SecretGrant: grant, AuthDelegator: *authDelegator, ScrapeTokenWriter: writer, Log: log,
			ScraperToken: scrapertoken.Keeper{Secret: *scraperSecret, ServiceAccount: *scraperSA, TTL: *scraperTTL},
		})
	}
	return cmd
}

// operatorServiceAccount is --service-account, or the pod's own from the
// environment the chart sets.
func operatorServiceAccount(flag string) (types.NamespacedName, error) {
	if flag == "" {
		ns, name := os.Getenv("POD_NAMESPACE"), os.Getenv("SERVICE_ACCOUNT")
		if ns == "" || name == "" {
			return types.NamespacedName{}, errors.New("--secret-reader-clusterrole and --scrape-token-writer-clusterrole need --service-account NAMESPACE/NAME (or POD_NAMESPACE and SERVICE_ACCOUNT): the operator binds that ServiceAccount")
		}
		return types.NamespacedName{Namespace: ns, Name: name}, nil
	}
	ns, name, ok := strings.Cut(flag, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, fmt.Errorf("--service-account %q: want NAMESPACE/NAME", flag)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// loadPumpDefaults reads the --pump-defaults file (YAML or JSON; unknown
// keys are an error, so a misspelt chart value is not silently ignored).
func loadPumpDefaults(path string) (feedobjects.PumpDefaults, error) {
	b, err := os.ReadFile(path) //nolint:gosec // the operator's own configuration file
	if err != nil {
		return feedobjects.PumpDefaults{}, fmt.Errorf("pump defaults: %w", err)
	}
	d, err := feedobjects.ParsePumpDefaults(b)
	if err != nil {
		return feedobjects.PumpDefaults{}, fmt.Errorf("pump defaults %s: %w", path, err)
	}
	return d, nil
}
