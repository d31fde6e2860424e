package pumppod

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// statusWriter is the one place FlightFeed status is written. Every write
// reads the object, applies a mutation, skips the write when nothing
// changed, and otherwise patches with an optimistic lock, retrying on
// conflict.
//
// The first read of an update is the manager's cache (cached, when set): a
// report that changes nothing, what an idle feed's reports are, then costs
// no call to the API server. A cache that lags behind a write (ours, just
// made, or another writer's) can only make the patch conflict, and every
// retry reads fresh from the API server (reader); a cache that lags behind
// another writer's change only delays a write that is due until the
// next report, once the cache has seen it.
type statusWriter struct {
	// cached is the manager's cache (nil: every read is fresh).
	cached client.Reader
	// reader is uncached, for the retries after a conflict.
	reader client.Reader
	writer client.Client
}

// errStale means the FlightFeed was replaced (same name, new UID) or is
// gone: the write belongs to an object that no longer exists.
var errStale = fmt.Errorf("flightfeed replaced or gone")

// update applies mutate to the status of the FlightFeed key with uid. It
// reports whether it wrote.
func (w statusWriter) update(ctx context.Context, key types.NamespacedName, uid types.UID, mutate func(*v1alpha1.FlightFeedStatus)) (bool, error) {
	wrote := false
	fresh := w.cached == nil
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ff v1alpha1.FlightFeed
		if err := w.get(ctx, key, uid, &ff, fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return errStale
			}
			return err
		}
		// A conflict below (the cache lagged) makes the next attempt read
		// fresh.
		fresh = true
		if uid != "" && ff.UID != uid {
			return errStale
		}
		orig := ff.DeepCopy()
		mutate(&ff.Status)
		if equality.Semantic.DeepEqual(orig.Status, ff.Status) {
			return nil
		}
		if err := w.writer.Status().Patch(ctx, &ff, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("write status of flightfeed %s: %w", key, err)
	}
	return wrote, nil
}

// get reads the FlightFeed from the cache, or from the API server when
// fresh or when the cache cannot answer (not synced, not yet seen, or
// another UID: the cache may not have seen a replacement yet).
func (w statusWriter) get(ctx context.Context, key types.NamespacedName, uid types.UID, ff *v1alpha1.FlightFeed, fresh bool) error {
	if !fresh {
		if err := w.cached.Get(ctx, key, ff); err == nil && (uid == "" || ff.UID == uid) {
			return nil
		}
		*ff = v1alpha1.FlightFeed{}
	}
	return w.reader.Get(ctx, key, ff)
}
