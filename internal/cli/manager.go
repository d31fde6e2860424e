package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/controllers"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/operator"
	"github.com/flightfeed/flightfeed/internal/pump"
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
	probeAddr := f.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz (0 disables)")
	apiAddr := f.String("api-bind-address", ":8082", "address of the read API (0 disables)")
	identity := f.String("identity", "", "identity in Leases and the database writer lock (default: $POD_NAME, else the host name)")
	leaseDuration := f.Duration("lease-duration", 15*time.Second, "how long a feed's Lease is valid without renewal")
	renewDeadline := f.Duration("renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it stops its pump")
	retryPeriod := f.Duration("retry-period", 2*time.Second, "how often Lease acquisition and renewal are tried")
	statusInterval := f.Duration("status-interval", 5*time.Second, "period of the status reports")
	namespaces := f.StringSlice("namespaces", nil, "watch only these namespaces (default: all)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		log := newLogger(cmd)
		logf.SetLogger(log)
		id := *identity
		if id == "" {
			id = hostIdentity()
		}
		return operator.Run(cmd.Context(), operator.Options{
			Kubeconfig: *kubeconfig, MetricsAddr: *metricsAddr, ProbeAddr: *probeAddr, APIAddr: *apiAddr,
			Identity: id, LeaseDuration: *leaseDuration, RenewDeadline: *renewDeadline, RetryPeriod: *retryPeriod,
			StatusInterval: *statusInterval, Namespaces: *namespaces, Log: log,
			Factory: startFeed,
		})
	}
	return cmd
}

// startFeed is the operator's runner factory: the same pump and dispatcher
// as `flightfeed pump`, under the epoch the Lease holder took.
func startFeed(ctx context.Context, feed *config.Feed, identity string, epoch int64) (controllers.FeedRunner, error) {
	r, err := feedrun.Start(ctx, feed, feedrun.Options{Identity: identity, Epoch: epoch,
		Log: logf.FromContext(ctx), Observer: controllers.ObserverFromContext(ctx)})
	if err != nil {
		return nil, err
	}
	return noticingRunner{r}, nil
}

// noticingRunner lets the operator turn each DEAD message into its own
// Kubernetes Event (controllers.NoticeSource).
type noticingRunner struct{ *feedrun.Runner }

// DrainNotices implements controllers.NoticeSource.
func (n noticingRunner) DrainNotices() []controllers.Notice {
	pn := n.Runner.DrainNotices()
	out := make([]controllers.Notice, len(pn))
	for i, x := range pn {
		kind := controllers.NoticeDead
		switch {
		case x.DayMismatch:
			kind = controllers.NoticeDayMismatch
		case x.Reason == pump.ReasonIDReused:
			kind = controllers.NoticeIDReused
		}
		out[i] = controllers.Notice{Kind: kind, MessageID: x.MessageID, Reason: x.Reason, Detail: x.Detail}
	}
	return out
}
