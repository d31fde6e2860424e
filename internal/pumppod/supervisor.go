package pumppod

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/backoff"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/panics"
	"github.com/flightfeed/flightfeed/internal/store"
)

// feedDesired is the reconciler's latest view of one feed.
type feedDesired struct {
	Generation int64
	UID        types.UID
	// Feed is the resolved feed, nil when ConfigErr is set.
	Feed      *config.Feed
	ConfigErr error
	// Plaintext is what Feed's DSNs send in plain text (for the
	// PlaintextDependency condition), Unverified what they reach over TLS
	// without verification (UnverifiedTLSDependency), WeakAuth the
	// password requests they answer (WeakDatabaseAuth), worked out once
	// per resolution.
	Plaintext  []config.Plaintext
	Unverified []config.Unverified
	WeakAuth   []config.WeakAuth
	// Hash identifies the resolved configuration (spec, credentials, UID):
	// the runner restarts when it changes.
	Hash        string
	Terminating bool
}

// leaderState is what the leader knows about its runner; the reporter
// reads it. Guarded by feedSupervisor.mu.
type leaderState struct {
	leading     bool
	since       time.Time
	epoch       int64
	phase       runPhase
	runner      FeedRunner
	runnerHash  string
	lastErr     error
	databaseErr bool
	// mailboxErr: the runner failed connecting to the mailbox.
	mailboxErr bool
	// schemaVersion is the database's schema version as last found on
	// opening it (0: not yet known).
	schemaVersion int64
	// stopping is when the runner was asked to stop and has not yet
	// returned (zero otherwise); a runner that ignores cancellation makes
	// the replica unhealthy.
	stopping time.Time
	// ledger is the feed's database, opened on leadership for the epoch
	// and the ledger; ledgerDSN is what it was opened with.
	ledger    *store.Store
	ledgerDSN string
}

// feedSupervisor contends for one feed's Lease and, while it holds it,
// runs the feed's runner and status reporter.
type feedSupervisor struct {
	key     types.NamespacedName
	deps    *supervisorDeps
	elector *leaseElector
	log     logr.Logger

	// changed wakes the runner loop when the resolved configuration
	// changed; poke asks the reporter for a report now.
	changed chan struct{}
	poke    chan struct{}

	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	desired feedDesired
	st      leaderState
}

func newFeedSupervisor(deps *supervisorDeps, key types.NamespacedName, d feedDesired) *feedSupervisor {
	// The Lease lives in the feed's namespace, owned by the FlightFeed (the
	// operator makes it so; a pod that finds none makes it the same way).
	meta := metav1.ObjectMeta{
		Labels:          map[string]string{LabelLeaseFeed: "true"},
		Annotations:     map[string]string{AnnotationLeaseFeed: key.String()},
		OwnerReferences: []metav1.OwnerReference{ownerRef(key, d.UID)},
	}
	s := &feedSupervisor{
		key:     key,
		deps:    deps,
		elector: newLeaseElector(deps.leases, deps.leaseKey(key), deps.identity, meta, deps.timings, deps.clock),
		log:     deps.log.WithValues("flightfeed", key.String()),
		changed: make(chan struct{}, 1),
		poke:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		desired: d,
	}
	return s
}

// setDesired records the reconciler's view; a new configuration restarts
// the runner, anything else is reported at the next report.
func (s *feedSupervisor) setDesired(d feedDesired) {
	s.mu.Lock()
	prev := s.desired
	s.desired = d
	s.mu.Unlock()
	if prev.Hash != d.Hash || errText(prev.ConfigErr, "") != errText(d.ConfigErr, "") {
		signal(s.changed)
	}
	if prev.Generation != d.Generation || prev.Terminating != d.Terminating {
		signal(s.poke)
	}
}

func (s *feedSupervisor) getDesired() feedDesired {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.desired
}

func (s *feedSupervisor) update(fn func(*leaderState)) {
	s.mu.Lock()
	fn(&s.st)
	s.mu.Unlock()
	signal(s.poke)
}

// signal wakes the receiver of ch without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run contends for the Lease until ctx ends, leading whenever it holds it.
func (s *feedSupervisor) run(ctx context.Context) {
	defer close(s.done)
	ctx = logf.IntoContext(ctx, s.log)
	for {
		if !s.elector.acquire(ctx) {
			return
		}
		s.lead(ctx)
		if ctx.Err() != nil {
			return
		}
	}
}

// lead runs the leader's duties until the Lease is lost or ctx ends. The
// Lease is renewed on a context of its own so that, on a graceful stop,
// it is still held while the runner winds down and the last status is
// written; only then is it released.
func (s *feedSupervisor) lead(ctx context.Context) {
	now := s.deps.clock.Now()
	s.update(func(st *leaderState) {
		*st = leaderState{leading: true, since: now, phase: phaseStarting}
	})
	s.deps.metrics.setLeader(s.key, true)
	s.log.Info("leading the feed", "identity", s.deps.identity)
	s.event(corev1.EventTypeNormal, ReasonLeaderElected, "Lead", "%s holds the Lease and starts the pump", s.deps.identity)

	leadCtx, cancelLead := context.WithCancel(ctx)
	defer cancelLead()
	// Not cancelled with ctx on purpose: renewal continues until the
	// runner has stopped and the last status is written.
	holdCtx, stopHold := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHold()
	// Every Lease held is renewed by its own goroutine; losing it stops
	// the pump at once.
	holders := []*leaseElector{s.elector}
	lost := make(chan error, len(holders))
	for _, e := range holders {
		go func() {
			err := s.holdLease(holdCtx, e)
			if err != nil {
				cancelLead()
			}
			lost <- err
		}()
	}
	// waitHolds collects the outcome of every hold goroutine still running
	// (after stopHold): the first loss, or nil.
	waitHolds := func(first error, pending int) error {
		for range pending {
			if err := <-lost; first == nil {
				first = err
			}
		}
		return first
	}

	reporterDone := make(chan struct{})
	go func() {
		defer close(reporterDone)
		s.runReporter(leadCtx)
	}()

	s.runLoop(leadCtx)
	cancelLead()
	<-reporterDone

	var lostErr error
	pending := len(holders)
	if ctx.Err() == nil {
		// leadCtx ended while ctx lives: only a lost Lease does that. Wait
		// for the reason rather than mistake it for a graceful stop.
		lostErr = <-lost
		pending--
	} else {
		select {
		case lostErr = <-lost:
			pending--
		default:
		}
	}
	if lostErr == nil {
		// A fresh context on purpose: ctx is cancelled, yet the last
		// status and the release must still reach the API server.
		final, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.deps.timings.RenewDeadline)
		s.finalReport(final)
		stopHold()
		lostErr = waitHolds(nil, pending)
		if lostErr == nil {
			for i := len(holders) - 1; i >= 0; i-- {
				if err := holders[i].release(final); err != nil {
					s.log.Error(err, "release lease")
				}
			}
			s.event(corev1.EventTypeNormal, ReasonSteppedDown, "Lead", "%s stopped the pump and released the Lease", s.deps.identity)
		}
		cancel()
	} else {
		stopHold()
	}
	if lostErr != nil {
		s.log.Info("lost the lease; pump stopped", "reason", lostErr.Error())
		s.event(corev1.EventTypeWarning, ReasonLeadershipLost, "Lead", "%s lost the Lease and stopped the pump: %s", s.deps.identity, lostErr.Error())
	}

	s.mu.Lock()
	ledger := s.st.ledger
	s.st = leaderState{}
	s.mu.Unlock()
	if ledger != nil {
		ledger.Close()
	}
	s.deps.metrics.setLeader(s.key, false)
}

// runReporter reports until ctx ends. A panic of a report (a bug) must
// neither end the process nor leave the feed without status: the reporter
// starts again, with the runner's restart backoff, from the supervisor's
// state.
func (s *feedSupervisor) runReporter(ctx context.Context) {
	_ = s.restart(whereStatusReporter, s.deps.restartBackoff, s.deps.maxRestartBackoff).Run(ctx, func(ctx context.Context) error {
		s.reportLoop(ctx)
		return nil
	})
}

// holdLease renews the Lease as e.hold does, restarting it after a panic
// (logged, counted) within the retry period, so one bad renewal does not
// cost the Lease. A holder that keeps panicking renews nothing: once
// RenewDeadline has passed since the last renewal it reports the Lease
// lost, so the pump stops as it would after failed renewals.
func (s *feedSupervisor) holdLease(ctx context.Context, e *leaseElector) error {
	retry := s.deps.timings.RetryPeriod
	return s.restart(whereLeaseHolder, retry/4, retry).Run(ctx, func(ctx context.Context) error {
		if last := e.lastRenewAt(); s.deps.clock.Since(last) >= s.deps.timings.RenewDeadline {
			e.setLeading(false)
			return fmt.Errorf("%w: not renewed since %s (renew deadline %s; the holder panicked)", errLeaseLost,
				last.Format(time.RFC3339), s.deps.timings.RenewDeadline)
		}
		return e.hold(ctx)
	})
}

// restart keeps one of the supervisor's long-lived loops running through
// its panics: each is logged with its stack and counted
// (flightfeed_pump_panics_total{where}); the loop starts again after a
// backoff from initial to maxWait.
func (s *feedSupervisor) restart(where string, initial, maxWait time.Duration) panics.Restart {
	return panics.Restart{Where: where, Initial: initial, Max: maxWait, Clock: s.deps.clock,
		OnPanic: func(e *panics.Error, inARow int, wait time.Duration) {
			s.deps.metrics.countLoopPanic(s.key, where)
			s.log.Error(e, "panic in a long-lived goroutine of the pump pod (a FlightFeed bug); restarting it",
				"where", where, "in_a_row", inARow, "after", wait.String(), "stack", string(e.Stack))
		}}
}

// runLoop keeps a runner running for the current configuration while
// leadCtx lasts: restarted at once when the configuration changes and
// with backoff (package backoff) when it fails.
//
// A runner another pump fenced (a second deployment on the same database:
// its own Lease, the same pipeline_lock) does not start again with a fresh
// epoch while that pump lives, or the two would take the feed from each
// other for ever: it waits (awaitSilentHolder) until the holder has not
// renewed its epoch for holderSilence, for the rest of this leadership.
func (s *feedSupervisor) runLoop(ctx context.Context) {
	failures := 0
	fenced := false
	defer s.deps.metrics.setFenced(s.key, false)
	for ctx.Err() == nil {
		d := s.getDesired()
		if d.Feed == nil {
			s.update(func(st *leaderState) { st.phase, st.lastErr, st.databaseErr = phaseWaiting, nil, false })
			select {
			case <-ctx.Done():
			case <-s.changed:
			}
			continue
		}
		if fenced {
			if !s.awaitSilentHolder(ctx, d, failures) {
				continue // stopped, or the configuration changed: look again
			}
			fenced = false
		}
		err := s.runOnce(ctx, d)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errRestart):
			failures = 0
			continue
		}
		if err == nil {
			err = errors.New("the pump returned without being stopped")
		}
		if errors.Is(err, store.ErrFenced) {
			fenced = true
			failures++
			s.update(func(st *leaderState) { st.phase, st.lastErr = phaseFenced, err })
			s.mu.Lock()
			mine := s.st.epoch
			s.mu.Unlock()
			h, herr := s.epochHolder(ctx, d)
			if herr == nil && h.Epoch == mine {
				// The database's epoch is still this replica's: the Kafka
				// producer was fenced (dispatch.ErrFenced); restarted with
				// backoff (awaitSilentHolder).
				s.log.Error(err, "pump stopped; restarting")
				s.event(corev1.EventTypeWarning, ReasonFenced, "Pump", "another pump took a newer fencing epoch: %s", err.Error())
				continue
			}
			holder := "another pump"
			if herr == nil {
				holder = fmt.Sprintf("pump %q (epoch %d)", h.Holder, h.Epoch)
			}
			s.log.Error(err, "pump fenced; not taking the feed back while the other pump lives", "holder", holder)
			s.event(corev1.EventTypeWarning, ReasonFenced, "Pump", "%s took the feed (a second deployment on this database?): %s; "+
				"this replica does not take it back while that pump renews its epoch", holder, err.Error())
			continue
		}
		var schemaErr *store.SchemaError
		refused := errors.As(err, &schemaErr)
		s.update(func(st *leaderState) {
			st.phase, st.lastErr, st.mailboxErr = phaseFailed, err, errors.Is(err, mailbox.ErrUnreachable)
			if refused {
				st.phase, st.schemaVersion = phaseSchemaRefused, schemaErr.Current
			}
		})
		failures++
		wait := backoff.Delay(failures, s.deps.restartBackoff, s.deps.maxRestartBackoff, backoff.Shared)
		switch {
		case refused:
			// Not a failure to retry away: the database must change (or
			// the release). Checked again with backoff, so a migration or
			// a rollback of the database is noticed.
			reason := ReasonSchemaTooOld
			if errors.Is(err, store.ErrSchemaTooNew) {
				reason = ReasonSchemaTooNew
			}
			s.log.Error(err, "refusing to run the pump on this database schema; checking again later",
				"schemaVersion", schemaErr.Current, "knownVersion", schemaErr.Known, "after", wait)
			s.event(corev1.EventTypeWarning, reason, "Pump", "the pump refuses to run: %s", err.Error())
		case errors.As(err, new(*panics.Error)):
			var pe *panics.Error
			errors.As(err, &pe)
			s.deps.metrics.countLoopPanic(s.key, whereRunner)
			s.log.Error(err, "pump panicked; restarting", "after", wait, "stack", string(pe.Stack))
			s.event(corev1.EventTypeWarning, ReasonPumpPanicked, "Pump", "the pump panicked (a FlightFeed bug, stack in the pod's log), restarting in %s: %s", wait, err.Error())
		default:
			s.log.Error(err, "pump stopped; restarting", "after", wait)
			s.event(corev1.EventTypeWarning, ReasonPumpFailed, "Pump", "pump failed, restarting in %s: %s", wait, err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
			failures = 0
		case <-s.deps.clock.After(wait):
		}
	}
}

// awaitSilentHolder waits, with the restart backoff, until the pump that
// fenced this one has not renewed its epoch for holderSilence, keeping the
// phase Fenced with a status naming it and the fenced gauge at 1. true: the
// feed may be taken back; false: ctx ended or the configuration changed.
// failures counts the runner's consecutive failures (its restart backoff).
func (s *feedSupervisor) awaitSilentHolder(ctx context.Context, d feedDesired, failures int) bool {
	s.mu.Lock()
	mine := s.st.epoch
	s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		h, err := s.epochHolder(ctx, d)
		if err == nil && h.Epoch == mine {
			// Fenced elsewhere (the Kafka producer by a stray one), the
			// database's epoch still this replica's: nobody else holds the
			// feed; restarted with the restart backoff.
			select {
			case <-ctx.Done():
				return false
			case <-s.changed:
				return false
			case <-s.deps.clock.After(backoff.Delay(failures, s.deps.restartBackoff, s.deps.maxRestartBackoff, backoff.Shared)):
				return true
			}
		}
		if err == nil && h.Silent >= s.deps.holderSilence {
			s.log.Info("the pump that fenced this one is silent; taking the feed back", "holder", h.Holder, "epoch", h.Epoch,
				"silent", h.Silent.String())
			s.deps.metrics.setFenced(s.key, false)
			return true
		}
		wait := backoff.Delay(attempt, s.deps.restartBackoff, s.deps.maxRestartBackoff, backoff.Shared)
		why := fmt.Errorf("%w: reading its holder: %w; checking again in %s", store.ErrFenced, err, wait)
		if err == nil {
			why = fmt.Errorf("%w: pump %q holds the feed (epoch %d, taken %s, renewed %s ago); not taking it back while it lives "+
				"(until it is silent for %s); checking again in %s", store.ErrFenced, h.Holder, h.Epoch,
				h.AcquiredAt.UTC().Format(time.RFC3339), h.Silent.Round(time.Second), s.deps.holderSilence, wait)
		}
		s.update(func(st *leaderState) { st.phase, st.lastErr = phaseFenced, why })
		s.deps.metrics.setFenced(s.key, true)
		select {
		case <-ctx.Done():
			return false
		case <-s.changed:
			if s.getDesired().Hash != d.Hash {
				return false
			}
		case <-s.deps.clock.After(wait):
		}
	}
}

// epochHolder reads who holds the feed's fencing epoch.
func (s *feedSupervisor) epochHolder(ctx context.Context, d feedDesired) (store.EpochHolder, error) {
	db, err := s.ledgerStore(ctx, d.Feed)
	if err != nil {
		return store.EpochHolder{}, err
	}
	return db.CurrentHolder(ctx)
}

// errRestart ends a runner whose configuration changed.
var errRestart = errors.New("configuration changed")

// runOnce opens the database, takes a fencing epoch, builds the runner and
// runs it until it returns, the configuration changes or ctx ends.
func (s *feedSupervisor) runOnce(ctx context.Context, d feedDesired) error {
	s.update(func(st *leaderState) { st.phase, st.databaseErr, st.mailboxErr = phaseStarting, false, false })
	db, err := s.ledgerStore(ctx, d.Feed)
	if err != nil {
		// A refused schema is a database that answers.
		if !errors.As(err, new(*store.SchemaError)) {
			s.update(func(st *leaderState) { st.databaseErr = true })
		}
		return err
	}
	s.update(func(st *leaderState) { st.schemaVersion = db.SchemaVersion() })
	epoch, err := db.TakeEpoch(ctx, s.deps.identity)
	if err != nil {
		s.update(func(st *leaderState) { st.databaseErr = true })
		return err
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	log := s.log.WithValues("epoch", epoch)
	var runner FeedRunner
	err = panics.Guard(func() error {
		var ferr error
		runner, ferr = s.deps.factory(logf.IntoContext(runCtx, log), RunParams{Feed: d.Feed, Identity: s.deps.identity, Epoch: epoch,
			Store: db, Observer: s.deps.metrics.Observer(s.key), Registerer: s.deps.metrics.FeedRegisterer(s.key),
			DeliveryLatency: s.deps.metrics.DeliveryLatency(s.key), ReceiptLatency: s.deps.metrics.ReceiptLatency(s.key), Log: log})
		return ferr
	})
	if err != nil {
		return fmt.Errorf("build the pump: %w", err)
	}
	s.update(func(st *leaderState) {
		st.phase, st.runner, st.runnerHash, st.epoch, st.lastErr = phaseRunning, runner, d.Hash, epoch, nil
	})
	log.Info("pump started")
	done := make(chan error, 1)
	go func() { done <- panics.Guard(func() error { return runner.Run(runCtx) }) }()

	for {
		select {
		case err := <-done:
			s.update(func(st *leaderState) { st.runner = nil })
			closeRunner(runner)
			return err
		case <-ctx.Done():
			s.stopRunner(runner, cancelRun, done)
			return ctx.Err()
		case <-s.changed:
			if s.getDesired().Hash == d.Hash {
				continue
			}
			log.Info("configuration changed; restarting the pump")
			s.stopRunner(runner, cancelRun, done)
			// The loop reads the new configuration; leave the signal for it.
			signal(s.changed)
			return errRestart
		}
	}
}

// stopRunner cancels the runner and waits for it, at most StopTimeout. A
// runner that does not stop is left behind (its epoch is superseded by the
// next start, so it cannot commit) and makes the replica unhealthy.
func (s *feedSupervisor) stopRunner(runner FeedRunner, cancel context.CancelFunc, done <-chan error) {
	s.update(func(st *leaderState) { st.stopping = s.deps.clock.Now() })
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			s.log.Info("pump stopped with an error", "error", err.Error())
		}
		s.update(func(st *leaderState) { st.stopping, st.runner = time.Time{}, nil })
		closeRunner(runner)
	case <-s.deps.clock.After(s.deps.stopTimeout):
		s.log.Error(nil, "pump did not stop after cancellation; leaving it fenced", "waited", s.deps.stopTimeout)
		s.update(func(st *leaderState) { st.runner = nil })
	}
}

// closeRunner releases a runner that has returned from Run, when it has
// anything to release.
func closeRunner(r FeedRunner) {
	if c, ok := r.(interface{ Close() }); ok {
		c.Close()
	}
}

// ledgerStore returns the leader's connection to the feed's database,
// migrated, opening it on first use or when the DSN changed.
func (s *feedSupervisor) ledgerStore(ctx context.Context, feed *config.Feed) (*store.Store, error) {
	s.mu.Lock()
	cur, dsn := s.st.ledger, s.st.ledgerDSN
	s.mu.Unlock()
	if cur != nil && dsn == feed.Secrets.DatabaseDSN {
		// Kept across pump restarts, but only on the schema it was
		// checked at: another release may have migrated it meanwhile.
		v, err := cur.ReadSchemaVersion(ctx)
		if err != nil {
			return nil, err
		}
		if v == cur.SchemaVersion() {
			return cur, nil
		}
		s.log.Info("the database schema changed since it was opened; checking it again", "was", cur.SchemaVersion(), "now", v)
	}
	db, err := s.deps.openStore(ctx, feed)
	if err != nil {
		if cur != nil && errors.As(err, new(*store.SchemaError)) {
			// The schema moved under the open store: it must not be used.
			s.mu.Lock()
			if s.st.ledger == cur {
				s.st.ledger, s.st.ledgerDSN = nil, ""
			}
			s.mu.Unlock()
			cur.Close()
		}
		return nil, err
	}
	s.mu.Lock()
	old := s.st.ledger
	s.st.ledger, s.st.ledgerDSN = db, feed.Secrets.DatabaseDSN
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return db, nil
}

// openFeedStore checks (and, with database.autoMigrate, migrates) the
// feed's database schema and connects to it, once per leadership (or DSN
// change): the runner shares this store. A refused schema is a
// *store.SchemaError.
func openFeedStore(ctx context.Context, feed *config.Feed) (*store.Store, error) {
	return feedrun.Open(ctx, feed)
}

// health is this supervisor's contribution to /healthz. Readiness does
// not look at feeds: a feed's outage (its database, its pump) is in its
// conditions and metrics, and must not make the replica unready, or a
// database outage would block node drains through the PDB.
type health struct {
	leading    bool
	lastRenew  time.Time
	stuckSince time.Time
}

func (s *feedSupervisor) health() health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return health{leading: s.st.leading, lastRenew: s.elector.lastRenewAt(), stuckSince: s.st.stopping}
}

// clockOrReal returns c, or the real clock when c is nil.
func clockOrReal(c clock.WithTicker) clock.WithTicker {
	if c == nil {
		return clock.RealClock{}
	}
	return c
}

// regarding is the object Events are recorded on.
func (s *feedSupervisor) regarding() *v1alpha1.FlightFeed {
	d := s.getDesired()
	ff := &v1alpha1.FlightFeed{}
	ff.APIVersion, ff.Kind = v1alpha1.GroupVersion.String(), "FlightFeed"
	ff.Namespace, ff.Name, ff.UID = s.key.Namespace, s.key.Name, d.UID
	return ff
}

func (s *feedSupervisor) event(eventType, reason, action, note string, args ...any) {
	if s.deps.recorder == nil {
		return
	}
	s.deps.recorder.Eventf(s.regarding(), nil, eventType, reason, action, note, args...)
}
