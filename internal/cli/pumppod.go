package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/readapi"
)

// podFlags are the flags of `flightfeed pump --feed NS/NAME`, parsed
// straight into the pump pod's Options; the pod itself is package
// pumppod's Run.
type podFlags struct {
	// fs holds the flags only --feed uses, in the order they are declared.
	fs            *pflag.FlagSet
	o             pumppod.Options
	metricsSecure bool
}

func newPodFlags(cmd *cobra.Command) *podFlags {
	p := &podFlags{fs: pflag.NewFlagSet("pump pod", pflag.ContinueOnError)}
	p.fs.SortFlags = false
	f, o := p.fs, &p.o
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "with --feed: kubeconfig file (default: $KUBECONFIG, then in-cluster)")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", pumppod.DefaultMetricsAddr, "with --feed: address of the Prometheus metrics endpoint (0 disables)")
	f.BoolVar(&p.metricsSecure, "metrics-secure", true, "with --feed: serve metrics over HTTPS to bearer tokens allowed to get /metrics; false serves plain HTTP to anyone (local runs only)")
	f.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "with --feed: folder with tls.crt and tls.key for the metrics endpoint, reloaded on change (default: a self-signed certificate made at start)")
	f.StringVar(&o.ProbeAddr, "health-probe-bind-address", pumppod.DefaultProbeAddr, "with --feed: address of /healthz and /readyz (0 disables)")
	f.StringVar(&o.APIAddr, "api-bind-address", pumppod.DefaultAPIAddr, "with --feed: address of the feed's read API, HTTPS with bearer tokens (0 disables)")
	f.IntVar(&o.APIMaxConcurrentRequests, "api-max-concurrent-requests", readapi.DefaultMaxConcurrentRequests, "with --feed: read API requests served at once (after authorization); more are refused with 429 and Retry-After")
	f.StringVar(&o.APICertDir, "api-cert-dir", "", "with --feed: folder with tls.crt and tls.key for the read API, reloaded on change (default: a self-signed certificate made at start)")
	f.BoolVar(&o.EnableHTTP2, "enable-http2", false, "with --feed: offer HTTP/2 on the metrics and read API endpoints")
	f.DurationVar(&o.LeaseDuration, "lease-duration", 15*time.Second, "with --feed: how long the feed's Lease is valid without renewal")
	f.DurationVar(&o.RenewDeadline, "renew-deadline", 10*time.Second, "with --feed: how long the leader keeps trying to renew before it stops its pump")
	f.DurationVar(&o.RetryPeriod, "retry-period", 2*time.Second, "with --feed: how often Lease acquisition and renewal are tried")
	f.DurationVar(&o.StatusInterval, "status-interval", 5*time.Second, "with --feed: period of the status reports")
	f.DurationVar(&o.StatusFiguresInterval, "status-figures-interval", 30*time.Second,
		"with --feed: write fast-moving figures (counts, rates, lag) to the feed's status at most this often; condition changes are written at once")
	f.DurationVar(&o.SecretResync, "secret-resync-period", pumppod.DefaultSecretResync,
		"with --feed: how often the feed's Secrets are read again (by name): a rotated Secret restarts the pump within this period")
	f.BoolVar(&o.InCluster, "in-pod", false, "with --feed: this pump runs in a pod of the cluster (the operator sets it), whose loopback is the pod itself: kafka.brokers on loopback are refused")
	cmd.Flags().AddFlagSet(p.fs)
	return p
}

// changed names a --feed-only flag given without --feed ("" when none).
func (p *podFlags) changed() string {
	name := ""
	p.fs.VisitAll(func(f *pflag.Flag) {
		if name == "" && f.Changed {
			name = f.Name
		}
	})
	return name
}

func (p *podFlags) run(cmd *cobra.Command, key types.NamespacedName, identity string) error {
	if p.o.APIMaxConcurrentRequests < 1 {
		return usageError{fmt.Errorf("--api-max-concurrent-requests %d: must be at least 1", p.o.APIMaxConcurrentRequests)}
	}
	log := newLogger(cmd).WithValues("flightfeed", key.String())
	logf.SetLogger(log)
	if identity == "" {
		identity = hostIdentity()
	}
	o := p.o
	o.Feed, o.Identity, o.InsecureMetrics, o.Log, o.Factory = key, identity, !p.metricsSecure, log, pumppod.StartFeed
	return pumppod.Run(cmd.Context(), o)
}
