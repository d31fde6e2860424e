package pumppod

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/feednames"
)

// LeaseTimings are the timings of the per-feed Lease, with client-go's
// meaning. A holder that cannot renew for RenewDeadline stops its pump; a
// candidate takes over a Lease it has seen unchanged for LeaseDuration.
// RenewDeadline < LeaseDuration is what makes the old holder stop before a
// new one can start (the fencing epoch covers a holder that was paused).
type LeaseTimings struct {
	// LeaseDuration a candidate waits on an unchanged Lease. Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline the holder keeps retrying a failed renewal. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod between attempts to acquire or renew. Default 2s.
	RetryPeriod time.Duration
}

// Default Lease timings.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// jitterFactor spreads the candidates' attempts (as client-go does).
const jitterFactor = 1.2

// WithDefaults fills unset timings.
func (t LeaseTimings) WithDefaults() LeaseTimings {
	if t.LeaseDuration <= 0 {
		t.LeaseDuration = DefaultLeaseDuration
	}
	if t.RenewDeadline <= 0 {
		t.RenewDeadline = DefaultRenewDeadline
	}
	if t.RetryPeriod <= 0 {
		t.RetryPeriod = DefaultRetryPeriod
	}
	return t
}

// Validate checks the timings keep a holder's step-down ahead of a
// takeover.
func (t LeaseTimings) Validate() error {
	if t.LeaseDuration <= t.RenewDeadline {
		return fmt.Errorf("lease duration %s must be longer than the renew deadline %s", t.LeaseDuration, t.RenewDeadline)
	}
	if float64(t.RenewDeadline) <= jitterFactor*float64(t.RetryPeriod) {
		return fmt.Errorf("renew deadline %s must be longer than %.1f × the retry period %s", t.RenewDeadline, jitterFactor, t.RetryPeriod)
	}
	if t.LeaseDuration < time.Second {
		return fmt.Errorf("lease duration %s must be at least 1s (the Lease counts whole seconds)", t.LeaseDuration)
	}
	return nil
}

// FeedLeaseName is the name of the feed's Lease in the feed's namespace
// (feednames.Lease).
func FeedLeaseName(feed types.NamespacedName) string { return feednames.Lease(feed) }

// Labels and annotations of a feed's Lease in the manager's namespace (it
// cannot be owned by a FlightFeed of another namespace).
const (
	// LabelLeaseFeed marks a Lease as a FlightFeed's.
	LabelLeaseFeed = "flightfeed.aero/feed-lease"
	// AnnotationLeaseFeed names the feed, "<namespace>/<name>".
	AnnotationLeaseFeed = "flightfeed.aero/feed"
)

// boundedName joins prefix, name and suffix into a valid object name (at
// most 253 characters), replacing the end of name by a hash of it when
// the whole would be longer.
func boundedName(prefix, name, suffix string) string {
	const maxLen = 253
	if len(prefix)+len(name)+len(suffix) <= maxLen {
		return prefix + name + suffix
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:4])
	keep := strings.TrimRight(name[:maxLen-len(prefix)-len(suffix)-len(hash)-1], ".-")
	return prefix + keep + "-" + hash + suffix
}

// errLeaseLost is returned by hold when this replica no longer leads.
var errLeaseLost = errors.New("lease lost")

// leaseAction is what a replica does with the Lease it observed.
type leaseAction int

const (
	// leaseWait: another replica holds a valid Lease.
	leaseWait leaseAction = iota
	// leaseAcquire: the Lease is free or expired; take it.
	leaseAcquire
	// leaseRenew: this replica holds it; renew.
	leaseRenew
)

// decideLease is the rule, without I/O. Expiry is judged by the local
// clock from when this replica last saw the Lease change (observedAt), not
// by the holder's timestamps, so clock skew between nodes cannot shorten
// a lease.
func decideLease(holder, me string, duration time.Duration, observedAt, now time.Time) leaseAction {
	switch {
	case holder == me:
		return leaseRenew
	case holder == "":
		return leaseAcquire
	case !now.Before(observedAt.Add(duration)):
		return leaseAcquire
	default:
		return leaseWait
	}
}

// leaseElector contends for one feed's Lease. It is not safe for
// concurrent acquire/hold calls; leading and lastRenew may be read from
// any goroutine.
type leaseElector struct {
	leases   coordinationv1client.LeasesGetter
	key      types.NamespacedName
	identity string
	// meta is what a Lease this elector creates carries besides its name:
	// labels, annotations, owner.
	meta    metav1.ObjectMeta
	timings LeaseTimings
	clock   clock.Clock

	observedRV string
	observedAt time.Time
	// observedDuration is the duration the Lease last observed gives.
	observedDuration time.Duration
	// noWatchUntil: the watch was refused; read the Lease every
	// RetryPeriod until then.
	noWatchUntil time.Time
	// watchRefused: a watch was refused before (logged at V(1) since).
	watchRefused bool
	// onObserve, when set (tests), is called with each new version
	// observed.
	onObserve func(rv string)
	// mine is the Lease as this replica last wrote it, for renewing
	// without reading first (a conflict falls back to a read).
	mine *coordinationv1.Lease

	mu        sync.Mutex
	holder    string
	leading   bool
	lastRenew time.Time
}

func newLeaseElector(leases coordinationv1client.LeasesGetter, key types.NamespacedName, identity string,
	meta metav1.ObjectMeta, timings LeaseTimings, clk clock.Clock) *leaseElector {
	return &leaseElector{leases: leases, key: key, identity: identity, meta: meta, timings: timings, clock: clk}
}

// acquire tries until this replica holds the Lease (true) or ctx ends
// (false). While another replica validly holds it, the standby watches the
// Lease instead of reading it every RetryPeriod: each renewal it sees
// restarts its wait (observedAt is when the event arrived, by the local
// clock, as for a read), and it tries again the moment the Lease expired
// by that observation, or is released or deleted. Without a watch (refused,
// or broken) it reads the Lease every RetryPeriod (with jitter), as
// client-go's elector does.
func (e *leaseElector) acquire(ctx context.Context) bool {
	var w watch.Interface
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	for {
		callCtx, cancel := context.WithTimeout(ctx, e.timings.RenewDeadline)
		ok, holder, err := e.try(callCtx)
		cancel()
		if ok {
			return true
		}
		if ctx.Err() == nil {
			e.logFailure(ctx, "acquire", err)
		}
		if err == nil && holder != "" && holder != e.identity {
			if w == nil {
				w = e.watch(ctx)
			}
			if w != nil {
				switch e.awaitLease(ctx, w) {
				case leaseStopped:
					return false
				case leaseChanged:
					continue
				case leaseWatchEnded:
					w.Stop()
					w = nil
				}
			}
		}
		wait := time.Duration(float64(e.timings.RetryPeriod) * (1 + rand.Float64()*(jitterFactor-1))) //nolint:gosec // jitter only
		select {
		case <-ctx.Done():
			return false
		case <-e.clock.After(wait):
		}
	}
}

// leaseWatchRetry is how long a standby whose watch of the Lease was
// refused (a Role without watch on it) reads the Lease every RetryPeriod
// before asking for a watch again.
const leaseWatchRetry = 5 * time.Minute

// watch opens a watch of the Lease from the version last observed, or
// returns nil (the standby then reads the Lease every RetryPeriod).
func (e *leaseElector) watch(ctx context.Context) watch.Interface {
	now := e.clock.Now()
	if now.Before(e.noWatchUntil) {
		return nil
	}
	w, err := e.leases.Leases(e.key.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", e.key.Name).String(),
		ResourceVersion: e.observedRV,
	})
	if err != nil {
		e.noWatchUntil = now.Add(leaseWatchRetry)
		if ctx.Err() == nil {
			// Said once at the default level (a Role of an earlier release
			// lacks watch on the Lease), then at V(1).
			log := logf.FromContext(ctx)
			if e.watchRefused {
				log = log.V(1)
			}
			e.watchRefused = true
			log.Info("cannot watch the lease; reading it every retry period instead", "lease", e.key.String(),
				"error", err.Error(), "retryPeriod", e.timings.RetryPeriod, "watchAgainIn", leaseWatchRetry)
		}
		return nil
	}
	return w
}

// awaitOutcome is how a standby's wait on a watched Lease ended.
type awaitOutcome int

const (
	// leaseStopped: ctx ended.
	leaseStopped awaitOutcome = iota
	// leaseChanged: the Lease expired by local observation, or was
	// released or deleted: try now.
	leaseChanged
	// leaseWatchEnded: the watch closed or failed: read the Lease after a
	// retry period and watch again.
	leaseWatchEnded
)

// awaitLease waits, on the watch w, until the Lease another replica holds
// has been seen unchanged for its duration (decideLease's rule, timed by
// the local clock from the last change observed) or is released.
func (e *leaseElector) awaitLease(ctx context.Context, w watch.Interface) awaitOutcome {
	timer := e.clock.NewTimer(e.observedAt.Add(e.observedDuration).Sub(e.clock.Now()))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return leaseStopped
		case <-timer.C():
			return leaseChanged
		case ev, open := <-w.ResultChan():
			if !open {
				return leaseWatchEnded
			}
			lease, isLease := ev.Object.(*coordinationv1.Lease)
			switch {
			case ev.Type == watch.Bookmark:
				continue
			case ev.Type == watch.Error || !isLease:
				return leaseWatchEnded
			case ev.Type == watch.Deleted:
				return leaseChanged
			case lease.ResourceVersion == e.observedRV:
				continue
			}
			now := e.clock.Now()
			holder := e.observe(lease, now)
			if holder == "" || holder == e.identity {
				return leaseChanged
			}
			timer.Reset(e.observedDuration)
		}
	}
}

// hold renews the Lease every RetryPeriod. It returns errLeaseLost as soon
// as another replica is seen holding it or no renewal succeeded for
// RenewDeadline, and nil when ctx ends first.
func (e *leaseElector) hold(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-e.clock.After(e.timings.RetryPeriod):
		}
		deadline := e.lastRenewAt().Add(e.timings.RenewDeadline)
		remaining := deadline.Sub(e.clock.Now())
		if remaining <= 0 {
			e.setLeading(false)
			return fmt.Errorf("%w: not renewed since %s (renew deadline %s)", errLeaseLost, e.lastRenewAt().Format(time.RFC3339), e.timings.RenewDeadline)
		}
		failpoint.Panic(failpoint.LeaseHold)
		callCtx, cancel := context.WithTimeout(ctx, remaining)
		ok, holder, err := e.try(callCtx)
		cancel()
		if ok {
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		e.logFailure(ctx, "renew", err)
		if holder != "" && holder != e.identity {
			e.setLeading(false)
			return fmt.Errorf("%w: held by %s", errLeaseLost, holder)
		}
	}
}

// logFailure logs a failed attempt with its error, so that an attempt the
// API server refuses (RBAC 403, a webhook, a timeout) never loops silently.
// Losing a race to another replica (a conflict, or a Lease created first)
// is ordinary contention and logged at V(1); a Lease validly held by
// another replica (err nil) is not a failure and not logged.
func (e *leaseElector) logFailure(ctx context.Context, attempt string, err error) {
	if err == nil {
		return
	}
	log := logf.FromContext(ctx).WithValues("lease", e.key.String(), "identity", e.identity)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		log.V(1).Info("lease "+attempt+" lost a race; trying again", "error", err.Error())
		return
	}
	log.Error(err, "lease "+attempt+" failed; trying again", "retryPeriod", e.timings.RetryPeriod)
}

// try makes one attempt to acquire or renew. It reports success, the
// holder it observed and, when the API server refused a call, its error
// (nil when it only found the Lease validly held by another replica).
func (e *leaseElector) try(ctx context.Context) (bool, string, error) {
	now := e.clock.Now()
	leases := e.leases.Leases(e.key.Namespace)
	if e.mine != nil && e.isLeading() {
		// Fast path: renew what we wrote last; the resource version makes
		// the update fail if anyone wrote since.
		lease := e.mine.DeepCopy()
		e.stamp(lease, now, false)
		if updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err == nil {
			e.renewed(updated, now)
			return true, e.identity, nil
		}
		// Whatever the error, the read below either succeeds (and decides
		// afresh) or fails with the error worth reporting.
		e.mine = nil
	}
	lease, err := leases.Get(ctx, e.key.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: *e.meta.DeepCopy()}
		lease.Name, lease.Namespace = e.key.Name, e.key.Namespace
		e.stamp(lease, now, true)
		created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
		if err != nil {
			return false, "", fmt.Errorf("create lease %s: %w", e.key, err)
		}
		e.renewed(created, now)
		return true, e.identity, nil
	}
	if err != nil {
		return false, e.currentHolder(), fmt.Errorf("get lease %s: %w", e.key, err)
	}
	holder := e.observe(lease, now)
	action := decideLease(holder, e.identity, e.observedDuration, e.observedAt, now)
	if action == leaseWait {
		return false, holder, nil
	}
	e.stamp(lease, now, action == leaseAcquire)
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		// A conflict means someone else wrote first: look again next time.
		return false, holder, fmt.Errorf("update lease %s: %w", e.key, err)
	}
	e.renewed(updated, now)
	return true, e.identity, nil
}

// observe records the Lease as read or watched at now: a new version
// restarts the wait from now. It returns the holder.
func (e *leaseElector) observe(lease *coordinationv1.Lease, now time.Time) string {
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if lease.ResourceVersion != e.observedRV {
		e.observedRV, e.observedAt = lease.ResourceVersion, now
		if e.onObserve != nil {
			e.onObserve(lease.ResourceVersion)
		}
	}
	e.observedDuration = e.timings.LeaseDuration
	if d := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); d > 0 {
		e.observedDuration = time.Duration(d) * time.Second
	}
	e.mu.Lock()
	e.holder = holder
	e.mu.Unlock()
	return holder
}

// stamp writes this replica into the Lease.
func (e *leaseElector) stamp(lease *coordinationv1.Lease, now time.Time, acquire bool) {
	t := metav1.NewMicroTime(now)
	lease.Spec.HolderIdentity = ptr.To(e.identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(e.timings.LeaseDuration / time.Second)) //nolint:gosec // seconds of a lease fit
	lease.Spec.RenewTime = &t
	if acquire {
		lease.Spec.AcquireTime = &t
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	}
}

func (e *leaseElector) renewed(lease *coordinationv1.Lease, now time.Time) {
	e.observedRV, e.observedAt, e.mine = lease.ResourceVersion, now, lease
	e.mu.Lock()
	defer e.mu.Unlock()
	e.holder, e.leading, e.lastRenew = e.identity, true, now
}

// release gives the Lease up if this replica still holds it, so a
// candidate takes over at once instead of after LeaseDuration.
func (e *leaseElector) release(ctx context.Context) error {
	e.setLeading(false)
	e.mine = nil
	leases := e.leases.Leases(e.key.Namespace)
	for range 3 {
		lease, err := leases.Get(ctx, e.key.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("release lease %s: %w", e.key, err)
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") != e.identity {
			return nil
		}
		now := metav1.NewMicroTime(e.clock.Now())
		lease.Spec.HolderIdentity = nil
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](1)
		lease.Spec.RenewTime = &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		if err == nil || !apierrors.IsConflict(err) {
			if err != nil {
				return fmt.Errorf("release lease %s: %w", e.key, err)
			}
			return nil
		}
	}
	return fmt.Errorf("release lease %s: conflicts kept happening", e.key)
}

func (e *leaseElector) setLeading(v bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading = v
}

// isLeading reports whether this replica believes it holds the Lease.
func (e *leaseElector) isLeading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

func (e *leaseElector) lastRenewAt() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastRenew
}

func (e *leaseElector) currentHolder() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.holder
}
