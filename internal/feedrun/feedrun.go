// Package feedrun runs one feed as a unit: the pump and, beside it, the
// Kafka dispatcher it wakes after every commit, on one store that Open
// migrates and opens once (the operator's supervisor shares it with its
// status reporter). `flightfeed pump` and the operator's per-feed runner
// both start feeds through it, so a feed runs the same with or without
// Kubernetes. It wires; it decides nothing.
package feedrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/panics"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pump/pgstore"
	"github.com/flightfeed/flightfeed/internal/recsize"
	"github.com/flightfeed/flightfeed/internal/store"
)

// Options configure a feed run.
type Options struct {
	// Store is the feed's database, opened by Open. When set, the caller
	// owns it (the operator's supervisor shares it with the status
	// reporter and closes it); when nil, Start opens one and Close closes
	// it.
	Store *store.Store
	// Identity names this process in the writer lock and logs.
	Identity string
	// Epoch is the fencing epoch taken on becoming leader (0: take one).
	Epoch int64
	Log   logr.Logger
	// Observer receives the pump's metrics (optional).
	Observer pump.Observer
	// KafkaOpts tune the producer (tests shorten timeouts).
	KafkaOpts []kgo.Opt
	// Registerer receives the statistics of the feed's connections (Kafka
	// client, PostgreSQL pool, MySQL mailbox pool) while the runner lives;
	// nil: none. The operator passes one that labels them with the feed.
	Registerer prometheus.Registerer
	// DeliveryLatency observes each delivered record's seconds from outbox
	// commit to Kafka acknowledgement (dispatch.Options; optional).
	DeliveryLatency dispatch.LatencyObserver
	// ReceiptLatency observes the same records' seconds from the mailbox's
	// DATE_RECEIVED to Kafka acknowledgement (dispatch.Options; optional).
	ReceiptLatency dispatch.LatencyObserver
}

// Open checks the feed's database schema, migrates it when
// database.autoMigrate allows, and connects to it: the one place a feed's
// store is opened, so a leadership runs the migrations once and the pump,
// the dispatcher and the status reporter share one pool. A schema newer
// than the binary knows, or older while autoMigrate is false, is refused
// with a *store.SchemaError before anything is read or written: the pump
// never runs on a schema other than its own.
func Open(ctx context.Context, feed *config.Feed) (*store.Store, error) {
	feed, caps := withReadCaps(feed)
	dbTLS, err := feed.DatabaseTLS()
	if err != nil {
		return nil, err
	}
	version, err := store.PrepareSchema(ctx, feed.Secrets.DatabaseDSN, feed.AutoMigrateOn(), store.WithTLS(dbTLS))
	if err != nil {
		var se *store.SchemaError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("refusing to run the pump: %w", err)
		}
		return nil, fmt.Errorf("migrate the database: %w", err)
	}
	st, err := store.Open(ctx, feed.Secrets.DatabaseDSN, store.Options{
		MaxConns: feed.Spec.Database.MaxConns, Location: feed.Location, SchemaVersion: version, TLS: dbTLS,
		MaxMessageBytes: feed.Spec.Mailbox.MaxMessageBytes, ReadCap: caps.StoreReadCap})
	if err != nil {
		return nil, fmt.Errorf("open the database: %w", err)
	}
	return st, nil
}

// Runner is one running feed.
type Runner struct {
	pump *pump.Pump
	// mbox is the pump's mailbox, which the runner opened.
	mbox *mailbox.Mailbox
	disp *dispatch.Dispatcher
	// owned is the store Start opened itself (nil when it was given).
	owned *store.Store
	// st is the store in use, owned or given.
	st *store.Store
	// metrics are the connections' statistics (nil without a Registerer).
	metrics *clientMetrics
}

// Start connects a feed: it opens the database when none is given (Open),
// the mailbox, the producer and the dispatcher. Nothing runs until Run.
func Start(ctx context.Context, feed *config.Feed, opts Options) (*Runner, error) {
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	r := &Runner{}
	feed, caps := withReadCaps(feed)
	if caps.Lowered {
		opts.Log.Error(nil, "the pod's memory limit does not hold the configured read caps of its connections: "+
			"mailbox.maxMessageBytes and maxBatchBytes lowered to fit (a larger message is refused as over capacity)",
			"memoryLimit", caps.Limit, "connections", caps.Connections, "maxMessageBytes", caps.MaxMessageBytes,
			"maxBatchBytes", caps.MaxBatchBytes, "tooSmall", caps.TooSmall)
	}
	st := opts.Store
	if st == nil {
		var err error
		if st, err = Open(ctx, feed); err != nil {
			return nil, err
		}
		r.owned = st
	}
	// The pump and the dispatcher share the leader's fencing epoch: both
	// write under it, so a deposed leader can neither commit nor mark.
	epoch := opts.Epoch
	if epoch == 0 {
		var err error
		if epoch, err = st.TakeEpoch(ctx, opts.Identity); err != nil {
			r.closeStore()
			return nil, err
		}
	}
	// The pump wakes the dispatcher after commits; the hook is bound once
	// both exist (before Run).
	var wake func()
	// One door for the pump and the dispatcher: the pump refuses a message
	// whose records the topics would refuse (STATE_TOO_LARGE), the
	// dispatcher lowers it to a topic's smaller limit, and the producer's
	// batches follow it.
	door, err := recsize.New(int(feed.Spec.Kafka.MaxRecordBytes), feed.Spec.Kafka.Compression)
	if err != nil {
		r.closeStore()
		return nil, err
	}
	kafkaOpts := append(slices.Clip(opts.KafkaOpts),
		kgo.ProducerBatchMaxBytesFn(func(string) int32 { return int32(door.Max()) })) //nolint:gosec // at most 1 GiB
	// The pump's mailbox, closed with the runner (Close).
	mbox, err := mailbox.OpenFeed(ctx, feed)
	if err != nil {
		r.closeStore()
		return nil, err
	}
	if opts.Registerer != nil {
		r.metrics = newClientMetrics(opts.Registerer)
		kafkaOpts = append(slices.Clip(kafkaOpts), kgo.WithHooks(r.metrics.kafka()))
	}
	p, err := pump.New(ctx, pump.Options{Feed: PumpFeed(feed), Store: pgstore.New(st), Inbox: mbox, Door: door,
		Identity: opts.Identity, Epoch: epoch, Log: opts.Log.WithName("pump"), Observer: opts.Observer,
		Notify: func() { wake() }})
	if err != nil {
		_ = mbox.Close()
		r.closeStore()
		return nil, err
	}
	client, err := dispatch.NewClient(feed, kafkaOpts...)
	if err != nil {
		_ = mbox.Close()
		r.closeStore()
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	// A client the broker refused while this replica still leads the feed
	// (a pass outlived kafka's transaction timeout) is renewed the same way.
	renew := func() (*kgo.Client, error) { return dispatch.NewClient(feed, kafkaOpts...) }
	d, err := dispatch.New(st, client, feed, dispatch.Options{Epoch: epoch, Log: opts.Log.WithName("dispatch"), Door: door, Renew: renew,
		DeliveryLatency: opts.DeliveryLatency, ReceiptLatency: opts.ReceiptLatency, Panicked: loopPanicked(opts.Observer)})
	if err != nil {
		client.Close()
		_ = mbox.Close()
		r.closeStore()
		return nil, err
	}
	wake = d.Notify
	r.pump, r.mbox, r.disp, r.st = p, mbox, d, st
	if r.metrics != nil {
		if err := r.metrics.register(st, mbox); err != nil {
			// Metrics never stop a feed; the series are missing and the log says why.
			opts.Log.Error(err, "register the connections' metrics")
		}
	}
	return r, nil
}

// PumpFeed is what the pump reads of feed (pump.Feed): its resolved spec,
// time zone and reference-data requests, not its credentials.
func PumpFeed(feed *config.Feed) pump.Feed {
	return pump.Feed{Spec: feed.Spec, Location: feed.Location,
		ReferenceTypes:     config.ReferenceRequestTypes(feed.Spec.Requests.ReferenceData),
		ReferenceRoutingID: config.ReferenceRoutingID(feed.Spec.Requests),
		IdlePollInterval:   config.IdlePollInterval(feed.Spec.Mailbox)}
}

// loopPanicked is the dispatcher's count of its recovered panics: the
// feed's observer's (nil without one).
func loopPanicked(o pump.Observer) func(string) {
	if o == nil {
		return nil
	}
	return o.LoopPanicked
}

func (r *Runner) closeStore() {
	if r.owned != nil {
		r.owned.Close()
	}
}

// Run pumps and publishes until ctx ends (nil), the pump is fenced
// (pump.ErrFenced) or the dispatcher stopped for good (dispatch.ErrFenced,
// which is a store.ErrFenced too, or dispatch.ErrProducerFailed): a feed
// whose Kafka producer is fenced stops as a whole, like a fenced pump.
func (r *Runner) Run(ctx context.Context) error {
	return r.run(ctx, func(ctx context.Context) error { return r.pump.Run(ctx) })
}

// Drain returns nil once every mailbox row is processed and written back
// and every outbox event is delivered, superseded or parked (Parked says
// how many are parked).
func (r *Runner) Drain(ctx context.Context) error {
	return r.run(ctx, func(ctx context.Context) error { return r.pump.Drain(ctx, r.disp.Idle) })
}

func (r *Runner) run(ctx context.Context, pumpRun func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var dispErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		// nil when ctx ends; an error only when it stopped for good. A
		// panic of the dispatcher stops the feed as an error (the pod
		// restarts it), not the process.
		if dispErr = panics.Guard(func() error { return r.disp.Run(ctx) }); dispErr != nil {
			cancel()
		}
	}()
	err := panics.Guard(func() error { return pumpRun(ctx) })
	cancel()
	wg.Wait()
	if dispErr != nil && (err == nil || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("kafka dispatcher stopped: %w", dispErr)
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Parked returns the number of parked outbox events and the oldest of them
// (nil when none): what `pump --drain` reports when it ends.
func (r *Runner) Parked(ctx context.Context) (int64, *store.ParkedEvent, error) {
	n, err := r.st.ParkedCount(ctx)
	if err != nil || n == 0 {
		return n, nil, err
	}
	first, err := r.st.ParkedEvents(ctx, 1)
	if err != nil || len(first) == 0 {
		return n, nil, err
	}
	return n, &first[0], nil
}

// Status is a feed's point-in-time report: the pump's, with the
// dispatcher's outbox and Kafka figures, which belong to the dispatcher.
type Status struct {
	pump.Status
	// OutboxPending and OutboxOldestAge describe undelivered Kafka events.
	OutboxPending   int64
	OutboxOldestAge time.Duration
	// KafkaReachable is false while the brokers fail, with the last error.
	KafkaReachable bool
	KafkaError     string
	// KafkaTransactionsOff is true when kafka.transactions is false: the
	// plain idempotent producer, which a deposed leader can still use.
	KafkaTransactionsOff bool
	// OutboxParked counts PARKED outbox events; OutboxParkedTotal the
	// events this run parked, the latest of which is LastParked.
	OutboxParked      int64
	OutboxParkedTotal int64
	LastParked        *dispatch.Parked
	// KafkaClientsRenewed counts the Kafka clients the dispatcher renewed
	// (dispatch.Status.ClientsRenewed).
	KafkaClientsRenewed int64
}

// Status reports the pump and the dispatcher.
func (r *Runner) Status() Status {
	d := r.disp.Status()
	s := Status{Status: r.pump.Status(), OutboxPending: d.Pending, OutboxOldestAge: d.OldestPendingAge,
		KafkaReachable: !d.Failing && d.BrokerError == "", KafkaError: d.BrokerError, KafkaTransactionsOff: !d.Transactional,
		OutboxParked: d.Parked, OutboxParkedTotal: d.ParkedTotal, LastParked: d.LastParked, KafkaClientsRenewed: d.ClientsRenewed}
	if d.Failing && d.LastError != "" {
		s.KafkaError = d.LastError
	}
	return s
}

// Holder reads who holds the feed's fencing epoch now (pipeline_lock):
// after Run returned pump.ErrFenced, the pump that took the feed over.
func (r *Runner) Holder(ctx context.Context) (store.EpochHolder, error) {
	return r.st.CurrentHolder(ctx)
}

// DrainNotices returns the pump's notable outcomes since the last call.
func (r *Runner) DrainNotices() []pump.Notice { return r.pump.DrainNotices() }

// Close releases the connections (after Run returned); a store given in
// Options stays open.
func (r *Runner) Close() {
	if r.metrics != nil {
		r.metrics.unregister()
	}
	r.disp.Client().Close() // the first, or the one the dispatcher renewed it with
	_ = r.mbox.Close()
	r.closeStore()
}
