package dispatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kgo"
	"k8s.io/utils/clock"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/recsize"
	"github.com/flightfeed/flightfeed/internal/store"
)

// Defaults of Options.
const (
	DefaultScanInterval  = 5 * time.Second
	DefaultBatchSize     = 1000
	DefaultStatsInterval = time.Second
	maxBatchSize         = 10000
)

// Options configure a Dispatcher; Epoch is required, the rest has defaults.
type Options struct {
	// Epoch is the fencing epoch this replica took in pipeline_lock when it
	// became the feed's leader (the pump's). Every statement that marks
	// events checks it, so a deposed dispatcher changes nothing.
	Epoch int64
	// Log receives structured logs (default discard). Keys: flid, msg_id.
	Log logr.Logger
	// Clock drives the periodic scan, backoff and ages (default real).
	Clock clock.WithTicker
	// ScanInterval is the period of the scan that finds events nobody
	// notified about, such as those left by a previous process (default
	// DefaultScanInterval).
	ScanInterval time.Duration
	// BatchSize bounds the records of one pass (its window takes half as
	// many outbox rows, each a notice and maybe a state) (default DefaultBatchSize,
	// at most 10000).
	BatchSize int
	// BackoffInitial and BackoffMax bound the retry delay after a failed
	// pass; it doubles with jitter (default: the feed's pump.backoffInitial
	// and pump.backoffMax).
	BackoffInitial, BackoffMax time.Duration
	// StatsInterval is how often Status's pending count is refreshed while
	// events flow (default DefaultStatsInterval).
	StatsInterval time.Duration
	// StallAfter is how long a pass may wait for the broker's answers
	// before Status reports it as failing (default DefaultDeliveryTimeout).
	// Records already sent are never abandoned: the pass keeps waiting.
	StallAfter time.Duration
	// Door is the pump's measure of records against kafka.maxRecordBytes
	// (optional): Run lowers it when a topic's max.message.bytes, as the
	// broker describes it, is smaller.
	Door *recsize.Measure
	// Renew builds a new client for the feed, as the caller built the
	// first (NewClient with the same options). The broker refuses a
	// transactional producer whose epoch it bumped — for a newer leader's
	// producer, and also on its own when a pass's transaction outlived
	// kafka's transaction timeout (the broker unreachable in the middle of
	// a pass). When that happens and the database says this dispatcher's
	// epoch is still the feed's, Run closes the refused client and goes on
	// with a renewed one instead of stopping. Nil: it stops.
	Renew func() (*kgo.Client, error)
	// DeliveryLatency observes, for each record the brokers acknowledged
	// and the database then recorded delivered, the seconds from its
	// outbox event's created_at (the pump's commit of the message) to the
	// acknowledgement (optional).
	DeliveryLatency LatencyObserver
	// ReceiptLatency observes, for the same records, the seconds from the
	// mailbox's DATE_RECEIVED of the message that queued the record to
	// the acknowledgement: what a consumer waits for an AODB message
	// (optional).
	ReceiptLatency LatencyObserver
	// Panicked counts a panic recovered in one of the dispatcher's
	// long-lived goroutines (where: WhereOutboxFlush) (optional).
	Panicked func(where string)
}

// LatencyObserver receives durations in seconds (a Prometheus histogram).
type LatencyObserver interface {
	Observe(seconds float64)
}

// Dispatcher delivers one feed's outbox to Kafka.
type Dispatcher struct {
	store  *store.Store
	client *kgo.Client
	topics Topics
	opts   Options
	log    logr.Logger
	clock  clock.WithTicker
	watch  *connWatch
	wake   chan struct{}
	// txn: each pass is one Kafka transaction (kafka.transactions).
	txn bool
	// beforeProduce, when set (tests), runs after a pass read its events
	// and before it produces them.
	beforeProduce func(ctx context.Context, events []store.OutboxEvent)
	// afterCommit, when set (tests), runs after a pass's transaction
	// committed and before its events are marked.
	afterCommit func(ctx context.Context)
	// txnOpen: a pass began a transaction that is not ended yet (only
	// touched by the pass under passMu, or its settling goroutine, which
	// the next pass waits for).
	txnOpen bool
	// suspects are events a pass saw refused with an error that is
	// permanent for a record (too large, invalid), by id. The broker
	// refuses a partition's batch whole, so such a pass cannot tell which
	// of its records is at fault: the next passes send the suspects one at
	// a time, alone, and park the one refused alone (touched like txnOpen).
	suspects map[store.RecordKey]suspect
	// ahead are records done (delivered or parked) above the outbox
	// cursor: the cursor stops below the first row of a window that is
	// not done, and the next passes do not send these again (touched like
	// txnOpen). aheadRows are the rows above the cursor whose every
	// record is done: the next reads leave them out. Lost with the
	// process: a new leader sends them again, at their version
	// (at-least-once).
	ahead     map[store.RecordKey]struct{}
	aheadRows map[int64]struct{}

	// passMu serialises passes (Run, DeliverOnce). prev is closed when the
	// previous pass has settled: a pass abandoned because its context
	// ended keeps settling in the background, and the next one waits for
	// it, so records of one FLID are never in flight twice.
	passMu sync.Mutex
	prev   chan struct{}
	rand   *rand.Rand
	// inPass is set while a pass runs, more after a pass that left events
	// pending (its window was full, suspects wait, or it failed): Idle
	// answers false without asking the database meanwhile.
	inPass, more atomic.Bool

	mu sync.Mutex
	// stopped is the error that stopped the dispatcher for good (fenced,
	// or a producer the broker refused for good); nil while it delivers.
	stopped    error
	status     Status
	oldest     time.Time
	statsAt    time.Time
	statsKnown bool
}

// New returns a dispatcher for the feed's topics. client must come from
// NewClient (it is checked); the dispatcher does not close it. feed must be
// defaulted by package config (Parse, Load or the operator's resolution
// did so): the dispatcher reads the topics and backoff from it and sets no
// defaults of its own.
func New(st *store.Store, client *kgo.Client, feed *config.Feed, opts Options) (*Dispatcher, error) {
	if st == nil || client == nil || feed == nil {
		return nil, errors.New("dispatcher: store, client and feed are required")
	}
	if opts.Epoch <= 0 {
		return nil, errors.New("dispatcher: no fencing epoch (take one with store.TakeEpoch when becoming leader)")
	}
	if err := checkClient(client, feed); err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	topics := Topics{State: feed.Spec.Kafka.Topics.State, Notice: feed.Spec.Kafka.Topics.Notice}
	if topics.State == "" || topics.Notice == "" {
		return nil, errors.New("dispatcher: the feed's topics are unset (the feed was not defaulted by package config)")
	}
	if topics.State == topics.Notice {
		return nil, fmt.Errorf("dispatcher: state and notice topic are both %q", topics.State)
	}
	opts, err := withDefaults(opts, feed)
	if err != nil {
		return nil, err
	}
	prev := make(chan struct{})
	close(prev)
	return &Dispatcher{
		store: st, client: client, topics: topics, opts: opts,
		log: opts.Log, clock: opts.Clock, watch: watchOf(client),
		wake: make(chan struct{}, 1), prev: prev, txn: feed.TransactionsOn(), suspects: map[store.RecordKey]suspect{},
		ahead: map[store.RecordKey]struct{}{}, aheadRows: map[int64]struct{}{},
		rand: rand.New(rand.NewPCG(uint64(opts.Clock.Now().UnixNano()), 0xd15a)), //nolint:gosec // jitter only
	}, nil
}

func withDefaults(o Options, feed *config.Feed) (Options, error) {
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ScanInterval <= 0 {
		o.ScanInterval = DefaultScanInterval
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	o.BatchSize = min(o.BatchSize, maxBatchSize)
	if o.StatsInterval <= 0 {
		o.StatsInterval = DefaultStatsInterval
	}
	if o.StallAfter <= 0 {
		o.StallAfter = DefaultDeliveryTimeout
	}
	pump := feed.Spec.Pump
	if o.BackoffInitial <= 0 && pump.BackoffInitial != nil {
		o.BackoffInitial = pump.BackoffInitial.Duration
	}
	if o.BackoffMax <= 0 && pump.BackoffMax != nil {
		o.BackoffMax = pump.BackoffMax.Duration
	}
	if o.BackoffInitial <= 0 || o.BackoffMax <= 0 {
		return o, errors.New("dispatcher: no backoff (set Options or the feed's pump.backoffInitial and pump.backoffMax; package config defaults them)")
	}
	o.BackoffMax = max(o.BackoffMax, o.BackoffInitial)
	return o, nil
}

// Notify wakes Run for a pass. It never blocks; calls made while a pass
// runs coalesce into one more pass.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Status returns a copy of the current status.
func (d *Dispatcher) Status() Status {
	d.mu.Lock()
	s := d.status
	s.Transactional = d.txn
	if s.Pending > 0 && !d.oldest.IsZero() {
		s.OldestPendingAge = max(d.clock.Since(d.oldest), 0)
	}
	watch := d.watch
	d.mu.Unlock()
	if err := watch.last(); err != nil {
		s.BrokerError = err.Error()
	}
	return s
}

// Idle reports whether no outbox event is PENDING: everything committed is
// delivered, superseded or parked (the dispatcher's half of `pump
// --drain`; Status().Parked says how many are parked). While the
// dispatcher knows events are pending — a pass runs, the last one left
// some (a full window, suspects, a failure), or a Notify waits for the
// next — it answers false without a statement: `pump --drain` asks at
// every poll, and counting the pending rows costs the server as much as
// the backlog is long (during a full-day snapshot's delivery, ten counts
// of up to 20,000 rows a second beside the passes). Otherwise, and once
// the dispatcher stopped for good, the database answers, and only it
// says true.
func (d *Dispatcher) Idle(ctx context.Context) (bool, error) {
	if (d.inPass.Load() || d.more.Load() || len(d.wake) > 0) && d.stoppedErr() == nil {
		return false, nil
	}
	pending, parked, oldest, err := d.store.OutboxFigures(ctx)
	if err != nil {
		return false, err
	}
	d.setStats(pending, parked, oldest)
	return pending == 0, nil
}

func (d *Dispatcher) setStats(pending, parked int64, oldest time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status.Pending, d.status.Parked, d.oldest = pending, parked, oldest
	d.statsAt, d.statsKnown = d.clock.Now(), true
}

// refreshStats re-reads the pending count when it is older than
// StatsInterval (or force). Failure only leaves the count stale.
func (d *Dispatcher) refreshStats(ctx context.Context, force bool) {
	d.mu.Lock()
	due := force || !d.statsKnown || d.clock.Since(d.statsAt) >= d.opts.StatsInterval
	d.mu.Unlock()
	if !due {
		return
	}
	pending, parked, oldest, err := d.store.OutboxFigures(ctx)
	if err != nil {
		d.log.V(1).Info("outbox stats", "error", err.Error())
		return
	}
	d.setStats(pending, parked, oldest)
}

// stop stops the dispatcher for good with err (the first error wins) and
// reports it; stoppedErr returns the error that won.
func (d *Dispatcher) stop(err error) {
	d.mu.Lock()
	first := d.stopped == nil
	if first {
		d.stopped = err
	}
	d.mu.Unlock()
	if first {
		d.recordFailure(err)
		d.mu.Lock()
		d.status.Stopped = true
		d.mu.Unlock()
		d.log.Error(err, "dispatcher stopped for good", "reason", string(classify(err)))
	}
}

// stoppedErr is the error that stopped the dispatcher, nil while it runs.
func (d *Dispatcher) stoppedErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stopped
}
