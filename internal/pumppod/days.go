package pumppod

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/verify"
)

// DayName is the name of the FlightFeedDay of feed and day ("pek-2026-09-09").
func DayName(feed, day string) string {
	return boundedName("", feed, "-"+day)
}

// ownerRef points a feed's Lease and days at the FlightFeed, so they go
// when it goes.
func ownerRef(key types.NamespacedName, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       "FlightFeed",
		Name:       key.Name,
		UID:        uid,
		Controller: ptr.To(true),
	}
}

// daySyncer mirrors a feed's ledger into FlightFeedDay objects: one per
// ledger day, status updated when the ledger row changes, removed when the
// day leaves the ledger (retention). Reads come from the cache; writes only
// happen for differences, so a sync of an unchanged ledger writes nothing.
type daySyncer struct {
	reader    client.Reader // cached
	apiReader client.Reader // uncached, for a day the cache has not seen yet
	writer    client.Client
}

// newestDays returns the newest keep days of the ledger (all of them when
// keep is not positive): the ones that get a FlightFeedDay.
func newestDays(ledger []store.LedgerDay, keep int) []store.LedgerDay {
	days := slices.Clone(ledger)
	slices.SortFunc(days, func(a, b store.LedgerDay) int { return strings.Compare(a.Day, b.Day) })
	if keep > 0 && len(days) > keep {
		days = days[len(days)-keep:]
	}
	return days
}

// sync makes the feed's FlightFeedDays the newest keep days of the ledger:
// created or updated for those, deleted for every other day (older than
// the newest keep, or gone from the ledger).
func (s daySyncer) sync(ctx context.Context, key types.NamespacedName, uid types.UID, ledger []store.LedgerDay, keep int) (int, error) {
	ledger = newestDays(ledger, keep)
	var list v1alpha1.FlightFeedDayList
	if err := s.reader.List(ctx, &list, client.InNamespace(key.Namespace), client.MatchingLabels{v1alpha1.LabelFeed: key.Name}); err != nil {
		return 0, fmt.Errorf("list flightfeeddays of %s: %w", key, err)
	}
	existing := make(map[string]*v1alpha1.FlightFeedDay, len(list.Items))
	for i := range list.Items {
		d := &list.Items[i]
		// Days of an earlier FlightFeed of the same name are left to the
		// garbage collector (their owner is gone).
		if metav1.IsControlledBy(d, &metav1.ObjectMeta{UID: uid}) {
			existing[d.Spec.Day] = d
		}
	}
	writes := 0
	var errs []error
	for _, day := range ledger {
		want := dayStatus(day)
		cur, ok := existing[day.Day]
		delete(existing, day.Day)
		if ok && equality.Semantic.DeepEqual(cur.Status, want) {
			continue
		}
		if err := s.put(ctx, key, uid, cur, day.Day, want); err != nil {
			errs = append(errs, err)
			continue
		}
		writes++
	}
	for _, stale := range existing {
		if err := s.writer.Delete(ctx, stale, client.Preconditions{UID: &stale.UID}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete flightfeedday %s/%s: %w", stale.Namespace, stale.Name, err))
			continue
		}
		writes++
	}
	return writes, errors.Join(errs...)
}

// put creates the day (when cur is nil) and writes its status.
func (s daySyncer) put(ctx context.Context, key types.NamespacedName, uid types.UID, cur *v1alpha1.FlightFeedDay, day string, want v1alpha1.FlightFeedDayStatus) error {
	if cur == nil {
		obj := &v1alpha1.FlightFeedDay{
			ObjectMeta: metav1.ObjectMeta{
				Name:            DayName(key.Name, day),
				Namespace:       key.Namespace,
				Labels:          map[string]string{v1alpha1.LabelFeed: key.Name, v1alpha1.LabelDay: day},
				OwnerReferences: []metav1.OwnerReference{ownerRef(key, uid)},
			},
			Spec: v1alpha1.FlightFeedDaySpec{FeedName: key.Name, Day: day},
		}
		err := s.writer.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			// The cache had not seen it yet: update the one that is there.
			err = s.apiReader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		}
		if err != nil {
			return fmt.Errorf("create flightfeedday %s/%s: %w", obj.Namespace, obj.Name, err)
		}
		cur = obj
	}
	orig := cur.DeepCopy()
	cur.Status = want
	if err := s.writer.Status().Patch(ctx, cur, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write status of flightfeedday %s/%s: %w", cur.Namespace, cur.Name, err)
	}
	return nil
}

func dayStatus(d store.LedgerDay) v1alpha1.FlightFeedDayStatus {
	return v1alpha1.FlightFeedDayStatus{
		Version:       d.Version,
		LastMessageID: d.LastMessageID,
		Flights:       d.Flights,
		LastCommitAt:  timePtr(d.LastCommitAt.Truncate(time.Second)),
		Verification:  dayVerification(d.Verification),
	}
}

// dayVerification is a day's last verification as its FlightFeedDay
// shows it (nil: none ran).
func dayVerification(v *verify.Record) *v1alpha1.DayVerification {
	if v == nil {
		return nil
	}
	return &v1alpha1.DayVerification{
		Outcome: v.Outcome, Flights: int64(v.Flights), Differing: int64(v.Differing), Messages: int64(v.Messages),
		Reason: truncate(v.Reason, 1024), FinishedAt: metav1.NewTime(v.FinishedAt.Truncate(time.Second)), RanBy: truncate(v.RanBy, 512),
	}
}
