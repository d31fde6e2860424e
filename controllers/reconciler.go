package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
)

// DefaultSecretResync is how often a feed's Secrets are read again when
// FlightFeedReconciler.SecretResync is zero (manager flag
// --secret-resync-period).
const DefaultSecretResync = time.Minute

// stopPoll is how often a deletion is looked at again while the pump stops.
const stopPoll = 500 * time.Millisecond

// FlightFeedReconciler runs on every replica. For each FlightFeed it
// validates the spec, resolves the Secrets and hands the result to the
// feed's supervisor (which contends for the Lease and, as holder, runs the
// pump and writes the status). It never writes status itself. Deletion
// waits, through a finalizer, until no replica runs the pump any more.
type FlightFeedReconciler struct {
	// Client reads FlightFeeds through the cache and writes finalizers.
	Client client.Client
	// SecretReader reads Secrets one at a time by name, uncached (the
	// manager's API reader): the operator neither lists nor watches them.
	SecretReader client.Reader
	// SecretResync is how often each feed is reconciled again to read its
	// Secrets anew (default DefaultSecretResync): a rotation restarts the
	// pump when the resolved credentials' digest changes, and a Secret
	// created or labelled after its FlightFeed is picked up.
	SecretResync time.Duration
	// Leases reads the Lease when deciding whether a deletion may finish.
	Leases client.Reader
	// Supervisors run the feeds.
	Supervisors *Supervisors
	// Directory receives every resolved feed, for the read API (optional).
	Directory *FeedDirectory
	// Clock judges Lease expiry (default: real).
	Clock clock.PassiveClock
}

// Reconcile brings one feed's supervisor in line with its FlightFeed.
func (r *FlightFeedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var ff v1alpha1.FlightFeed
	if err := r.Client.Get(ctx, req.NamespacedName, &ff); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get flightfeed: %w", err)
		}
		r.Directory.remove(req.NamespacedName)
		if !r.Supervisors.stop(req.NamespacedName, true) {
			return ctrl.Result{RequeueAfter: stopPoll}, nil
		}
		return ctrl.Result{}, nil
	}
	if !ff.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &ff)
	}
	if !controllerutil.ContainsFinalizer(&ff, v1alpha1.Finalizer) {
		orig := ff.DeepCopy()
		controllerutil.AddFinalizer(&ff, v1alpha1.Finalizer)
		if err := r.Client.Patch(ctx, &ff, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}

	d := feedDesired{Generation: ff.Generation, UID: ff.UID}
	feed, err := ResolveFeed(ctx, r.SecretReader, &ff)
	switch {
	case err == nil:
		d.Feed = feed
		d.Hash = configHash(ff.UID, feed)
		r.Directory.set(req.NamespacedName, feed)
	case configReason(err) != "":
		// Reported by the holder in the status; the next resync or a spec
		// change brings the feed back here.
		d.ConfigErr = err
		r.Directory.remove(req.NamespacedName)
		log.V(1).Info("feed cannot run", "reason", configReason(err), "error", err.Error())
	default:
		return ctrl.Result{}, err
	}
	if err := r.Supervisors.ensure(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, err
	}
	// No Secret is watched: the feed's Secrets are read again at the next
	// resync, and a changed digest (d.Hash) restarts the pump.
	return ctrl.Result{RequeueAfter: r.secretResync()}, nil
}

func (r *FlightFeedReconciler) secretResync() time.Duration {
	if r.SecretResync > 0 {
		return r.SecretResync
	}
	return DefaultSecretResync
}

// finalize stops this replica's supervisor and, once no replica holds a
// live Lease, removes the finalizer.
func (r *FlightFeedReconciler) finalize(ctx context.Context, ff *v1alpha1.FlightFeed) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(ff)
	r.Directory.remove(key)
	if !controllerutil.ContainsFinalizer(ff, v1alpha1.Finalizer) {
		r.Supervisors.stop(key, true)
		return ctrl.Result{}, nil
	}
	if !r.Supervisors.stop(key, true) {
		return ctrl.Result{RequeueAfter: stopPoll}, nil
	}
	held, err := r.leaseHeldElsewhere(ctx, key)
	if err != nil {
		return ctrl.Result{}, err
	}
	if held {
		// Another replica still runs the pump; it releases the Lease when
		// it reconciles the deletion.
		return ctrl.Result{RequeueAfter: r.Supervisors.Timings().RetryPeriod}, nil
	}
	if err := r.deleteLease(ctx, key); err != nil {
		return ctrl.Result{}, err
	}
	orig := ff.DeepCopy()
	controllerutil.RemoveFinalizer(ff, v1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, ff, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	logf.FromContext(ctx).Info("pump stopped everywhere; finalizer removed")
	return ctrl.Result{}, nil
}

// leaseHeldElsewhere reports whether another replica holds the feed's
// Lease (or, while migrating, its legacy Lease) and renewed it recently
// enough for it to be valid.
func (r *FlightFeedReconciler) leaseHeldElsewhere(ctx context.Context, key types.NamespacedName) (bool, error) {
	keys := []types.NamespacedName{r.Supervisors.LeaseKey(key)}
	if r.Supervisors.LegacyLeases() {
		keys = append(keys, legacyLeaseKey(key))
	}
	for _, lk := range keys {
		var lease coordinationv1.Lease
		err := r.Leases.Get(ctx, lk, &lease)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("get lease %s of %s: %w", lk, key, err)
		}
		if r.heldElsewhere(&lease) {
			return true, nil
		}
	}
	return false, nil
}

func (r *FlightFeedReconciler) heldElsewhere(lease *coordinationv1.Lease) bool {
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" || holder == r.Supervisors.Identity() {
		return false
	}
	if lease.Spec.RenewTime == nil {
		return true
	}
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	valid := time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second
	return clk.Now().Before(lease.Spec.RenewTime.Add(valid))
}

// deleteLease removes the feed's Lease once the feed is gone everywhere:
// in the manager's namespace it has no owner to be collected with. The
// precondition keeps a Lease someone renewed meanwhile.
func (r *FlightFeedReconciler) deleteLease(ctx context.Context, key types.NamespacedName) error {
	var lease coordinationv1.Lease
	lk := r.Supervisors.LeaseKey(key)
	if err := r.Leases.Get(ctx, lk, &lease); err != nil {
		return client.IgnoreNotFound(err)
	}
	if r.heldElsewhere(&lease) {
		return nil
	}
	err := r.Client.Delete(ctx, &lease, client.Preconditions{UID: &lease.UID, ResourceVersion: &lease.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete lease %s of %s: %w", lk, key, err)
	}
	return nil
}

// configHash identifies a resolved configuration. It covers the
// credentials, so a rotated Secret restarts the pump; it is never logged.
func configHash(uid types.UID, feed *config.Feed) string {
	b, err := json.Marshal(struct {
		UID     types.UID
		Spec    v1alpha1.FlightFeedSpec
		Secrets config.Secrets
	}{uid, feed.Spec, feed.Secrets})
	if err != nil {
		// Marshalling these plain types cannot fail; a constant keeps the
		// feed running rather than restarting it for nothing.
		return "unhashable"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SetupWithManager registers the reconciler: it watches FlightFeeds only.
// Secrets are neither watched nor listed (RBAC grants only get): each
// reconcile reads the feed's Secrets by name and requeues itself after
// SecretResync to notice a rotation.
func (r *FlightFeedReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("flightfeed").
		For(&v1alpha1.FlightFeed{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletionPredicate()))).
		WithOptions(controllerOptions()).
		Complete(r)
}

// deletionPredicate passes updates that set a deletion timestamp or change
// finalizers (a status update changes neither and is ignored).
func deletionPredicate() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !e.ObjectNew.GetDeletionTimestamp().Equal(e.ObjectOld.GetDeletionTimestamp()) ||
			len(e.ObjectNew.GetFinalizers()) != len(e.ObjectOld.GetFinalizers())
	}}
}

// controllerOptions lets a few feeds reconcile at once: a reconcile only
// resolves Secrets and hands over, it never waits on a pump.
func controllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: 4}
}
