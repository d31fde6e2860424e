package pumppod

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/store"
)

// FeedRunner is one feed's pump + dispatcher, started when this replica
// leads the feed.
type FeedRunner interface {
	// Run blocks until ctx is cancelled or the pump fails; the epoch was
	// taken by the caller. It returns nil after cancellation and an error
	// (store.ErrFenced when another pump took a newer epoch) otherwise.
	Run(ctx context.Context) error
	// Status is a point-in-time report; it must be cheap and safe to call
	// from another goroutine while Run runs.
	Status() feedrun.Status
}

// A FeedRunner may also implement Close() (feedrun.Runner does): the
// supervisor calls it once, after Run has returned, to release the runner's
// connections.

// RunParams is what a runner is built from when this replica becomes the
// feed's leader.
type RunParams struct {
	Feed *config.Feed
	// Identity is the pod identity; Epoch the fencing epoch it took.
	Identity string
	Epoch    int64
	// Store is the feed's database, migrated and opened once per
	// leadership by the supervisor (feedrun.Open), which also reads the
	// ledger from it and closes it: the runner shares it, never closes it.
	Store *store.Store
	// Observer receives the pump's metrics; Log is the runner's logger.
	Observer pump.Observer
	Log      logr.Logger
	// Registerer receives the statistics of the feed's connections
	// (labelled with the feed); nil: none.
	Registerer prometheus.Registerer
	// DeliveryLatency observes the feed's outbox-to-Kafka delivery
	// latency (flightfeed_outbox_delivery_latency_seconds); nil: none.
	DeliveryLatency prometheus.Observer
	// ReceiptLatency observes the mailbox-receipt-to-Kafka latency
	// (flightfeed_delivery_latency_seconds); nil: none.
	ReceiptLatency prometheus.Observer
}

// RunnerFactory builds a runner; ctx is the leadership context, cancelled
// when leadership ends. The factory must not start work that outlives Run.
type RunnerFactory func(ctx context.Context, p RunParams) (FeedRunner, error)

// NoticeSource is implemented by a FeedRunner that reports individual
// notable messages (feedrun.Runner does). Without it the status reporter
// still emits one Event per report that saw the DEAD count rise, without
// message ids.
type NoticeSource interface {
	// DrainNotices returns the notices since the last call, oldest first.
	// The runner keeps a bounded buffer; it may drop the oldest.
	DrainNotices() []pump.Notice
}

// StartFeed is the operator's runner factory: the same pump and Kafka
// dispatcher as `flightfeed pump` (feedrun), under the epoch the Lease
// holder took, on the supervisor's store, reporting to the feed's metrics
// observer. Its notices become Kubernetes Events (NoticeSource).
func StartFeed(ctx context.Context, p RunParams) (FeedRunner, error) {
	r, err := feedrun.Start(ctx, p.Feed, feedrun.Options{Store: p.Store, Identity: p.Identity, Epoch: p.Epoch,
		Log: p.Log, Observer: p.Observer, Registerer: p.Registerer, DeliveryLatency: p.DeliveryLatency,
		ReceiptLatency: p.ReceiptLatency})
	if err != nil {
		return nil, err
	}
	return r, nil
}
