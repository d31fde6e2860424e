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
// reads the object fresh from the API server, applies a mutation, skips the
// write when nothing changed, and otherwise patches with an optimistic lock,
// retrying on conflict.
type statusWriter struct {
	reader client.Reader // uncached: a cached read would make the lock conflict after each of our own writes
	writer client.Client
}

// errStale means the FlightFeed was replaced (same name, new UID) or is
// gone: the write belongs to an object that no longer exists.
var errStale = fmt.Errorf("flightfeed replaced or gone")

// update applies mutate to the status of the FlightFeed key with uid. It
// reports whether it wrote.
func (w statusWriter) update(ctx context.Context, key types.NamespacedName, uid types.UID, mutate func(*v1alpha1.FlightFeedStatus)) (bool, error) {
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ff v1alpha1.FlightFeed
		if err := w.reader.Get(ctx, key, &ff); err != nil {
			if apierrors.IsNotFound(err) {
				return errStale
			}
			return err
		}
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
