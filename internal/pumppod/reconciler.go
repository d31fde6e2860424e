package pumppod

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
)

// DefaultSecretResync is how often a feed's Secrets are read again when
// FlightFeedReconciler.SecretResync is zero (manager flag
// --secret-resync-period).
const DefaultSecretResync = time.Minute

// stopPoll is how often a deletion is looked at again while the pump stops.
const stopPoll = 500 * time.Millisecond

// FlightFeedReconciler runs in every pump pod, for the pod's one feed. It
// validates the spec, resolves the Secrets and hands the result to the
// feed's supervisor (which contends for the Lease and, as holder, runs the
// pump and writes the status). It never writes status itself, and adds no
// finalizer: the operator owns the pods' objects and the garbage collector
// removes them with the FlightFeed.
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
	// Supervisors run the feeds.
	Supervisors *Supervisors
	// Directory receives every resolved feed, for the read API (optional).
	Directory *FeedDirectory
	// InCluster: this pump runs in a pod of the cluster (see
	// ResolveOptions).
	InCluster bool
}

// Reconcile brings one feed's supervisor in line with its FlightFeed.
// The pump pods are the feed's own objects: when the FlightFeed goes, so
// does their Deployment, and this only stops the pump on the way.
func (r *FlightFeedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var ff v1alpha1.FlightFeed
	if err := r.Client.Get(ctx, req.NamespacedName, &ff); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get flightfeed: %w", err)
		}
		return r.stop(req.NamespacedName)
	}
	if !ff.DeletionTimestamp.IsZero() {
		return r.stop(req.NamespacedName)
	}
	d := feedDesired{Generation: ff.Generation, UID: ff.UID}
	feed, err := ResolveFeedWith(ctx, r.SecretReader, &ff, ResolveOptions{InCluster: r.InCluster})
	switch {
	case err == nil:
		d.Feed = feed
		d.Plaintext = config.PlaintextOf(&feed.Spec, feed.Secrets)
		d.Unverified = config.UnverifiedOf(&feed.Spec, feed.Secrets)
		d.WeakAuth = config.WeakAuthOf(feed.Secrets)
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

// stop stops this pod's supervisor of a feed that is gone or going: its
// runner stops, its last status is written and its Lease released.
func (r *FlightFeedReconciler) stop(key types.NamespacedName) (ctrl.Result, error) {
	r.Directory.remove(key)
	if !r.Supervisors.stop(key, true) {
		return ctrl.Result{RequeueAfter: stopPoll}, nil
	}
	return ctrl.Result{}, nil
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
// resolves Secrets and hands over, it never waits on a pump. The queue is
// quietQueue.
func controllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: 4, NewQueue: quietQueue}
}

// quietQueue is the reconciler's work queue: client-go's rate-limited
// queue without queue metrics, with the rate limiter controller-runtime
// gives it. controller-runtime's own queue (its priority queue) and any
// queue with metrics wake every 500 ms, idle or not, to refresh the
// unfinished-work gauges: two of an idle standby's three wake-ups a
// second, for a queue that holds one FlightFeed. This one wakes only for
// its items and a 10 s heartbeat. The pump pods export no workqueue_*
// series therefore; controller_runtime_reconcile_* stay.
func quietQueue(_ string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{})
}
