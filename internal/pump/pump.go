package pump

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// Observer receives what metrics need; every method must be cheap and must
// not block. NopObserver ignores everything.
type Observer interface {
	// MessageDone is called once per message with its terminal or retry
	// result (SUCCEEDED, SKIPPED, DEAD, FAILED).
	MessageDone(msgType, styp, result string)
	// BatchCommitted is called after each committed transaction.
	BatchCommitted(messages int, took time.Duration)
	// IgnoredTags counts SIS tags the module does not map.
	IgnoredTags(tags map[string]int)
	// ServiceError counts a failed read or write against a service the
	// pump depends on (ServiceMailbox, ServiceDatabase).
	ServiceError(service string)
	// SnapshotFlag counts one flag of a snapshot's trace row (an alert).
	SnapshotFlag(flag string)
	// TraceLogFailed counts a trace row that could not be written (seed
	// R5.6: an error metric, nothing else changes).
	TraceLogFailed()
	// MessagePanicked counts a message made DEAD (INTERNAL) because
	// decoding or applying it panicked, once, when its result commits.
	MessagePanicked()
	// SeqnRegression counts a message flagged SEQN_REGRESSION (a snapshot,
	// an FLOP, ADFT or FDEL alike), once, when its result commits: an
	// alert (processing rules R9).
	SeqnRegression()
	// LoopPanicked counts a panic recovered in one of the pump's
	// long-lived goroutines (where: WhereReadAhead, WhereEpochRenew,
	// WhereDatabaseWatch), which then goes on after a backoff.
	LoopPanicked(where string)
}

// ServiceMailbox names the mailbox in ServiceError.
const ServiceMailbox = "mailbox"

// ServiceDatabase names the feed's PostgreSQL database in ServiceError
// (counted once per stall: a call unanswered for DatabaseStallAfter).
const ServiceDatabase = "database"

// NopObserver ignores every observation.
type NopObserver struct{}

// MessageDone implements Observer.
func (NopObserver) MessageDone(string, string, string) {}

// BatchCommitted implements Observer.
func (NopObserver) BatchCommitted(int, time.Duration) {}

// IgnoredTags implements Observer.
func (NopObserver) IgnoredTags(map[string]int) {}

// ServiceError implements Observer.
func (NopObserver) ServiceError(string) {}

// SnapshotFlag implements Observer.
func (NopObserver) SnapshotFlag(string) {}

// TraceLogFailed implements Observer.
func (NopObserver) TraceLogFailed() {}

// MessagePanicked implements Observer.
func (NopObserver) MessagePanicked() {}

// SeqnRegression implements Observer.
func (NopObserver) SeqnRegression() {}

// LoopPanicked implements Observer.
func (NopObserver) LoopPanicked(string) {}

// Feed is what the pump reads of its feed's configuration: the spec with
// its defaults applied, validated (config.Feed resolves it), the airport's
// time zone, and the reference-data requests resolved from the spec. The
// pump never sees the feed's credentials: feedrun connects the services
// (feedrun.PumpFeed makes a Feed of a config.Feed).
type Feed struct {
	Spec v1alpha1.FlightFeedSpec
	// Location is the airport's time zone (spec.airport.timeZone).
	Location *time.Location
	// ReferenceTypes are the SIS TYPEs whose reference data the pump
	// requests (requests.referenceData.types resolved, sorted; none: no
	// request), ReferenceRoutingID those requests' routing id.
	ReferenceTypes     []string
	ReferenceRoutingID string
	// IdlePollInterval is mailbox.idlePollInterval resolved (its default
	// depends on pollInterval); zero or less than pollInterval: no
	// backoff of an idle head (emptyWait).
	IdlePollInterval time.Duration
}

// Options configure a Pump.
type Options struct {
	Feed Feed
	// Store is the feed's database (Postgres of the store feedrun
	// migrated and opened, and shares with the dispatcher and the status
	// reporter); the pump never closes it.
	Store Store
	// Inbox is the feed's mailbox, which the caller (feedrun) opens and
	// closes; the pump never closes it.
	Inbox Inbox
	// Identity names this pump in pipeline_lock and logs.
	Identity string
	// Epoch is the fencing epoch taken when this replica became leader;
	// 0 means take a new one at start (the standalone `flightfeed pump`).
	Epoch int64
	// Notify is called after every commit that queued outbox events, to
	// wake the dispatcher. Optional.
	Notify func()
	// Clock drives polling, backoff, requests and lifecycle (default real).
	Clock clock.WithTicker
	// Log receives structured logs (default discard).
	Log logr.Logger
	// Observer receives metrics (default NopObserver).
	Observer Observer
	// Door measures the Kafka records a message would publish against
	// kafka.maxRecordBytes (STATE_TOO_LARGE); nil: no message is measured.
	// feedrun builds it from the feed and shares it with the dispatcher,
	// which lowers it when a topic accepts less.
	Door Door
}

// Pump runs one feed.
type Pump struct {
	opts  Options
	feed  Feed
	store Store
	mbox  Inbox
	epoch int64
	log   logr.Logger
	clock clock.WithTicker
	obs   Observer
	rand  *rand.Rand

	decode sis.Options
	seqn   *sis.SeqnGenerator
	reqs   requester
	refs   refRequester
	// lastSeqn per sender, for SEQN regression flags (this session only).
	lastSeqn map[string]int
	// cache holds the flight states this pump committed (checked by
	// version before use, so it never needs invalidating).
	cache *pumpdata.StateCache
	// ahead is the read of the next batch, running while one is applied;
	// pending are committed results not yet written back (readAhead takes
	// them). Both belong to the loop goroutine.
	ahead   *reading
	pending []pumpdata.Backfill
	// batchSize is mailbox.batchSize: a backlog at the head is taken a
	// full batch at once, and a quiet head gives what it holds.
	// After a failure it is 1, so the failing message is isolated, and
	// doubles with every batch that commits until it is full again.
	batchSize int
	// infraAttempts counts consecutive failures at the current head;
	// refusal the same server error repeating there.
	infraAttempts int
	refusal       refusal
	// unrecorded counts the head's failed attempts that no FAILED (INFRA)
	// could record yet (the database was what failed).
	unrecorded unrecorded
	// upsertOnly: the last batch found a row it wrote as new already in
	// the database (pumpdata.ErrNotNew); until a batch commits, every row is
	// upserted.
	upsertOnly bool
	// panicked holds the rows whose application panicked, with their
	// note, until their DEAD (INTERNAL) result commits (applyPanicked).
	panicked map[panicKey]string
	// hooks are test seams (nil outside tests).
	hooks hooks
	// mboxOutage tracks a failing mailbox for its log lines.
	mboxOutage outage
	nextJobs   time.Time
	lastDepth  time.Time
	lastJobs   time.Time
	// lastBackfillCount is when a read-ahead last counted the intents
	// left (only the read-ahead goroutine touches it; one runs at a time).
	lastBackfillCount time.Time
	// emptyReads counts the empty head reads since the last batch; -1:
	// none since the pump started or fell back to pollInterval (emptyWait).
	emptyReads int
	// emptyWaited adds up the waits emptyWait returned since the last
	// batch, while emptyReads >= 0.
	emptyWaited time.Duration
	// emptySince is when the head was first found empty since the last
	// batch (zero while batches flow); idleAfter later the head is read
	// every idlePoll (emptyWait). draining keeps pollInterval: `--drain`
	// ends as soon as the outbox is delivered.
	emptySince time.Time
	idlePoll   time.Duration
	draining   bool
	// rate measures messages per second over windows of 10 s or more.
	rate struct {
		since time.Time
		count int64
	}

	mu      sync.Mutex
	status  Status
	notices []Notice
}

// New starts a pump on the given mailbox and store: it takes a fencing
// epoch in the store when none was given. It opens and closes nothing:
// the caller (feedrun) connects the mailbox, the database and the door.
func New(ctx context.Context, opts Options) (*Pump, error) {
	feed := opts.Feed
	switch {
	case opts.Store == nil:
		return nil, errors.New("pump: no store")
	case opts.Inbox == nil:
		return nil, errors.New("pump: no mailbox")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.Observer == nil {
		opts.Observer = NopObserver{}
	}
	st, mbox := opts.Store, opts.Inbox
	p := &Pump{
		opts: opts, feed: feed, store: st, mbox: mbox, epoch: opts.Epoch,
		log: opts.Log, clock: opts.Clock, obs: opts.Observer,
		rand:       rand.New(rand.NewPCG(uint64(opts.Clock.Now().UnixNano()), 0x5eed)), //nolint:gosec // jitter only
		decode:     sis.Options{MaxBytes: feed.Spec.Mailbox.MaxMessageBytes, Location: feed.Location, DeferRecordsFrom: deferRecordsFrom},
		lastSeqn:   map[string]int{},
		cache:      pumpdata.NewStateCache(0),
		emptyReads: -1,
		idlePoll:   feed.IdlePollInterval,
		batchSize:  max(int(feed.Spec.Mailbox.BatchSize), 1),
	}
	session, err := st.Start(ctx, opts.Identity, opts.Epoch)
	if err != nil {
		return nil, err
	}
	p.epoch = session.Epoch
	switch {
	case session.TraceErr != nil:
		// Logged only: no row was lost (flightfeed_trace_log_errors_total
		// counts rows), and the next start tries again.
		p.log.Error(session.TraceErr, "trace log: commits of unknown outcome not resolved (ignored; the next start tries again)")
	case session.TracesResolved > 0:
		p.log.Info("trace log: attempts whose commit failed without an answer resolved from what committed",
			"rows", session.TracesResolved)
	}
	p.seqn = sis.NewSeqnGenerator(sis.Seqn(session.LastSeqn)) //nolint:gosec // 1..999999 by CHECK
	p.reqs = requester{p: p}
	p.refs = refRequester{p: p, types: feed.ReferenceTypes}
	p.rate.since = opts.Clock.Now()
	p.status = Status{Holder: opts.Identity, Epoch: p.epoch, Since: opts.Clock.Now(), Counts: map[string]int64{},
		DatabaseReachable: true, MailboxReachable: true}
	return p, nil
}

// Status returns a copy of the current status.
func (p *Pump) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.status
	s.FailedRequests = slices.Clone(p.status.FailedRequests)
	s.Counts = make(map[string]int64, len(p.status.Counts))
	for k, v := range p.status.Counts {
		s.Counts[k] = v
	}
	return s
}

func (p *Pump) update(fn func(*Status)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(&p.status)
	failpoint.Hit(failpoint.StatusWrite)
}

// Drained reports whether every mailbox row is processed and every result
// is written back (the pump's half of `--drain`).
func (p *Pump) Drained(ctx context.Context) (bool, error) {
	depth, _, err := p.mbox.Depth(ctx)
	if err != nil {
		return false, err
	}
	_, pending, err := p.store.Backfills(ctx, 0)
	if err != nil {
		return false, err
	}
	return depth == 0 && pending == 0, nil
}

func (p *Pump) meta(m *sis.Message, row pumpdata.Row) engine.Meta {
	return engine.Meta{MessageID: row.ID, ReceivedAt: row.Received, Type: m.Meta.Type, Styp: m.Meta.Styp, Door: p.opts.Door}
}
