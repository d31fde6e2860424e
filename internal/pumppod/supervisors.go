package pumppod

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/store"
)

// Defaults of SupervisorOptions.
const (
	DefaultReportInterval = 5 * time.Second
	// DefaultFiguresInterval bounds how often a status write carries only
	// moved figures (counts, rates, lag, the ledger's versions): a busy
	// feed must not churn etcd. Metrics carry them at every report.
	DefaultFiguresInterval   = 30 * time.Second
	DefaultStopTimeout       = 20 * time.Second
	DefaultRestartBackoff    = time.Second
	DefaultMaxRestartBackoff = time.Minute
	// DefaultFencedHolderSilence: six of the holder's renewals
	// (pump.EpochRenewInterval) missed.
	DefaultFencedHolderSilence = 6 * pump.EpochRenewInterval
)

// SupervisorOptions configure the per-feed supervisors of one replica.
type SupervisorOptions struct {
	// Client writes (and reads through the cache); APIReader reads
	// uncached. A status write reads the cache first (a report that
	// changes nothing costs no call) and, after a conflict, APIReader.
	Client    client.Client
	APIReader client.Reader
	// Leases is the typed client for coordination.k8s.io/v1 Leases.
	Leases coordinationv1client.LeasesGetter
	// Recorder records Events on FlightFeeds (optional).
	Recorder events.EventRecorder
	// Factory builds a feed's runner when this replica leads it.
	Factory RunnerFactory
	// Identity is this replica's identity (the pod name); it must be
	// unique among the replicas.
	Identity string
	// Lease timings; zero fields take the defaults (15s/10s/2s).
	Lease LeaseTimings
	// ReportInterval between periodic status reports (default 5s).
	ReportInterval time.Duration
	// FiguresInterval: a report whose only change is fast-moving figures
	// (counts, rates, lag, queue depth, outbox, the ledger's versions) is
	// written to the status, and the FlightFeedDays, at most this often
	// (default 30s); a condition change, a new generation or a new day is
	// written at once, with the figures of the moment.
	FiguresInterval time.Duration
	// StopTimeout bounds the wait for a cancelled runner (default 20s, so
	// that stopping, the last report and the release fit in a pod's 30s
	// termination grace period).
	StopTimeout time.Duration
	// RestartBackoff and MaxRestartBackoff pace restarts of a failing
	// runner: doubling, with jitter in the upper half, from RestartBackoff
	// to MaxRestartBackoff (default 1s to 1m; package backoff). A maximum
	// below RestartBackoff is raised to it.
	RestartBackoff, MaxRestartBackoff time.Duration
	// FencedHolderSilence: a runner another pump fenced (a second
	// deployment on the same database) does not take the feed back while
	// that pump lives; it checks again with the restart backoff and takes
	// it once the holder has not renewed its epoch for this long (default
	// DefaultFencedHolderSilence, 30s).
	FencedHolderSilence time.Duration
	// Clock drives every timer (default: the real clock).
	Clock clock.WithTicker
	// Metrics receives the feeds' series (optional).
	Metrics *Metrics
	// Log is the supervisors' logger.
	Log logr.Logger
	// OpenStore opens and migrates a feed's database for the fencing epoch
	// and the ledger (default: store.Migrate + store.Open).
	OpenStore func(context.Context, *config.Feed) (*store.Store, error)
}

// supervisorDeps is what every feed supervisor shares.
type supervisorDeps struct {
	leases            coordinationv1client.LeasesGetter
	recorder          events.EventRecorder
	factory           RunnerFactory
	identity          string
	timings           LeaseTimings
	reportInterval    time.Duration
	figuresInterval   time.Duration
	stopTimeout       time.Duration
	restartBackoff    time.Duration
	maxRestartBackoff time.Duration
	holderSilence     time.Duration
	clock             clock.WithTicker
	metrics           *Metrics
	log               logr.Logger
	status            statusWriter
	days              daySyncer
	openStore         func(context.Context, *config.Feed) (*store.Store, error)
}

// Supervisors runs one supervisor per FlightFeed on this replica: each
// contends for its feed's Lease and, while it holds it, runs the feed's
// runner and reports its status. It is a manager Runnable that runs on
// every replica (no manager-wide leader election).
type Supervisors struct {
	deps *supervisorDeps

	started chan struct{}

	mu      sync.Mutex
	base    context.Context //nolint:containedctx // the Runnable's lifetime, handed to supervisors started later
	stopped bool
	feeds   map[types.NamespacedName]*feedSupervisor
	wg      sync.WaitGroup
}

// NewSupervisors checks the options and fills their defaults.
func NewSupervisors(o SupervisorOptions) (*Supervisors, error) {
	if o.Client == nil || o.APIReader == nil || o.Leases == nil || o.Factory == nil {
		return nil, errors.New("supervisors: Client, APIReader, Leases and Factory are required")
	}
	if o.Identity == "" {
		return nil, errors.New("supervisors: Identity is required")
	}
	timings := o.Lease.WithDefaults()
	if err := timings.Validate(); err != nil {
		return nil, fmt.Errorf("supervisors: %w", err)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReportInterval, DefaultReportInterval)
	def(&o.FiguresInterval, DefaultFiguresInterval)
	def(&o.StopTimeout, DefaultStopTimeout)
	def(&o.RestartBackoff, DefaultRestartBackoff)
	def(&o.MaxRestartBackoff, DefaultMaxRestartBackoff)
	def(&o.FencedHolderSilence, DefaultFencedHolderSilence)
	o.MaxRestartBackoff = max(o.MaxRestartBackoff, o.RestartBackoff)
	if o.OpenStore == nil {
		o.OpenStore = openFeedStore
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return &Supervisors{
		deps: &supervisorDeps{
			leases: o.Leases, recorder: o.Recorder, factory: o.Factory, identity: o.Identity, timings: timings,
			reportInterval: o.ReportInterval, figuresInterval: o.FiguresInterval, stopTimeout: o.StopTimeout, restartBackoff: o.RestartBackoff,
			maxRestartBackoff: o.MaxRestartBackoff, holderSilence: o.FencedHolderSilence, clock: clockOrReal(o.Clock),
			metrics: o.Metrics, log: o.Log, openStore: o.OpenStore,
			status: statusWriter{cached: o.Client, reader: o.APIReader, writer: o.Client},
			days:   daySyncer{reader: o.Client, apiReader: o.APIReader, writer: o.Client},
		},
		started: make(chan struct{}),
		feeds:   map[types.NamespacedName]*feedSupervisor{},
	}, nil
}

// Identity is this replica's identity.
func (s *Supervisors) Identity() string { return s.deps.identity }

// LeaseKey is where the feed's Lease is: in the feed's namespace.
func (s *Supervisors) LeaseKey(feed types.NamespacedName) types.NamespacedName {
	return s.deps.leaseKey(feed)
}

func (d *supervisorDeps) leaseKey(feed types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: feed.Namespace, Name: FeedLeaseName(feed)}
}

// Timings are the Lease timings in use.
func (s *Supervisors) Timings() LeaseTimings { return s.deps.timings }

// Start runs until ctx ends, then stops every supervisor: each stops its
// runner, writes its last status and releases its Lease.
func (s *Supervisors) Start(ctx context.Context) error {
	s.mu.Lock()
	s.base = ctx
	s.mu.Unlock()
	close(s.started)
	<-ctx.Done()
	s.mu.Lock()
	s.stopped = true
	for _, f := range s.feeds {
		f.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// NeedLeaderElection is false: every replica contends per feed instead.
func (s *Supervisors) NeedLeaderElection() bool { return false }

// ensure starts the feed's supervisor or hands it the new view. It waits
// for Start (the manager starts runnables and controllers together).
func (s *Supervisors) ensure(ctx context.Context, key types.NamespacedName, d feedDesired) error {
	select {
	case <-s.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("supervisors are shutting down")
	}
	if f, ok := s.feeds[key]; ok {
		f.setDesired(d)
		return nil
	}
	f := newFeedSupervisor(s.deps, key, d)
	fctx, cancel := context.WithCancel(s.base)
	f.cancel = cancel
	s.feeds[key] = f
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f.run(fctx)
	}()
	return nil
}

// stop asks the feed's supervisor to stop and reports whether it has: its
// runner stopped, its last status written and its Lease released.
func (s *Supervisors) stop(key types.NamespacedName, terminating bool) bool {
	s.mu.Lock()
	f, ok := s.feeds[key]
	s.mu.Unlock()
	if !ok {
		return true
	}
	if terminating {
		d := f.getDesired()
		if !d.Terminating {
			d.Terminating = true
			f.setDesired(d)
		}
	}
	f.cancel()
	select {
	case <-f.done:
	default:
		return false
	}
	s.mu.Lock()
	if s.feeds[key] == f {
		delete(s.feeds, key)
	}
	s.mu.Unlock()
	s.deps.metrics.forget(key)
	return true
}

// Leading reports whether this replica leads the feed (holds its Lease).
func (s *Supervisors) Leading(key types.NamespacedName) bool {
	s.mu.Lock()
	f, ok := s.feeds[key]
	s.mu.Unlock()
	return ok && f.health().leading
}

func (s *Supervisors) each(fn func(types.NamespacedName, health) error) error {
	s.mu.Lock()
	feeds := make(map[types.NamespacedName]*feedSupervisor, len(s.feeds))
	for k, f := range s.feeds {
		feeds[k] = f
	}
	s.mu.Unlock()
	var msgs []string
	for k, f := range feeds {
		if err := fn(k, f.health()); err != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %v", k, err))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	slices.Sort(msgs)
	return errors.New(strings.Join(msgs, "; "))
}

// LivenessCheck is the leader watchdog of /healthz: it fails when this
// replica believes it leads a feed whose Lease it has not renewed for
// longer than LeaseDuration (the renewal loop is wedged: another replica
// may already lead), or when a cancelled runner did not stop within
// StopTimeout. Restarting the process is the remedy for both.
func (s *Supervisors) LivenessCheck(*http.Request) error {
	now := s.deps.clock.Now()
	t := s.deps.timings
	return s.each(func(_ types.NamespacedName, h health) error {
		if h.leading && now.Sub(h.lastRenew) > t.LeaseDuration {
			return fmt.Errorf("leads but has not renewed its Lease since %s", h.lastRenew.UTC().Format(time.RFC3339))
		}
		if !h.stuckSince.IsZero() && now.Sub(h.stuckSince) > s.deps.stopTimeout {
			return fmt.Errorf("pump did not stop %s after cancellation", now.Sub(h.stuckSince).Truncate(time.Second))
		}
		return nil
	})
}
