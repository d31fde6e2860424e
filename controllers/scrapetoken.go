package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/scrapertoken"
)

// ScrapeTokens is how the operator gives each feed's ServiceMonitor a
// bearer token: a short-lived token of the metrics scraper's
// ServiceAccount made for that feed's audience alone
// (feednames.Audience), kept under the feed's name in the namespace's
// Secret feednames.PumpScrapeTokens (a ServiceMonitor reads Secrets of its
// own namespace only). A token sent to one feed's pods is good for that
// feed's /metrics and nothing else: not the API server, not another feed.
type ScrapeTokens struct {
	// Mint requests a token of the scraper's ServiceAccount for one
	// audience, valid for ttl; it returns the token and its expiry.
	Mint func(ctx context.Context, audience string, ttl time.Duration) (string, time.Time, error)
	// TTL of each token (default scrapertoken.DefaultTTL); a token is
	// replaced when a third of it is left.
	TTL time.Duration
	// Writer, when set, is the ClusterRole the operator binds itself to in
	// each namespace holding a FlightFeed, for the right to create Secrets
	// and to get and update feednames.PumpScrapeTokens: its own roles
	// grant no Secret. Nil: the operator holds that right already.
	Writer *SecretGrant
}

func (s *ScrapeTokens) ttl() time.Duration {
	if s.TTL <= 0 {
		return scrapertoken.DefaultTTL
	}
	return s.TTL
}

// keepScrapeToken makes sure key ff.Name of the namespace's scrape token
// Secret holds a live token for the feed alone, replacing one that is due,
// and returns when it must next be replaced. Keys of feeds the namespace
// no longer holds are dropped on the way; the Secret is owned by the
// namespace's FlightFeeds and goes with the last.
func (r *FlightFeedReconciler) keepScrapeToken(ctx context.Context, ff *v1alpha1.FlightFeed) (time.Time, error) {
	st := r.ScrapeTokens
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	audience := feednames.Audience(types.NamespacedName{Namespace: ff.Namespace, Name: ff.Name})
	var renewAt time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		key := types.NamespacedName{Namespace: ff.Namespace, Name: feednames.PumpScrapeTokens}
		err := r.APIReader.Get(ctx, key, &s)
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}, Type: corev1.SecretTypeOpaque}
		case err != nil:
			return fmt.Errorf("read secret %s: %w", key, err)
		case s.Labels[feednames.LabelManagedBy] != feednames.ManagedBy:
			return fmt.Errorf("secret %s exists and is not the operator's: rename or remove it (the feeds' ServiceMonitors read their scrape tokens from it)", key)
		}
		changed := create
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[feednames.LabelManagedBy] = feednames.ManagedBy
		if !ownedBy(&s, ff.UID) {
			s.OwnerReferences = append(s.OwnerReferences, metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(),
				Kind: "FlightFeed", Name: ff.Name, UID: ff.UID})
			changed = true
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		// A token's own lifetime times its renewal (the API server may
		// grant less than asked).
		tok := string(s.Data[ff.Name])
		issued, exp, terr := scrapertoken.TokenTimes(tok)
		aud, aerr := scrapertoken.TokenAudiences(tok)
		renewAt = scrapertoken.RenewAt(exp, exp.Sub(issued))
		if terr != nil || aerr != nil || !slices.Equal(aud, []string{audience}) || !clk.Now().Before(renewAt) {
			tok, exp, err := st.Mint(ctx, audience, st.ttl())
			if err != nil {
				return fmt.Errorf("request the scraper's token for %s: %w", audience, err)
			}
			s.Data[ff.Name] = []byte(tok)
			if issued, exp2, err := scrapertoken.TokenTimes(tok); err == nil {
				exp = exp2
				renewAt = scrapertoken.RenewAt(exp, exp.Sub(issued))
			} else {
				renewAt = scrapertoken.RenewAt(exp, st.ttl())
			}
			changed = true
			logf.FromContext(ctx).Info("scraper token for the feed's ServiceMonitor renewed", "secret", key.String(), "expires", exp.UTC().Format(time.RFC3339))
		}
		if r.dropGoneFeeds(ctx, &s) {
			changed = true
		}
		switch {
		case !changed:
			return nil
		case create:
			return r.Client.Create(ctx, &s)
		default:
			return r.Client.Update(ctx, &s)
		}
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("keep the scrape token of %s/%s: %w", ff.Namespace, ff.Name, err)
	}
	return renewAt, nil
}

// dropGoneFeeds removes the keys of feeds the namespace no longer holds
// (read from the cache: a feed made a moment ago gets its key at its own
// reconcile anyway).
func (r *FlightFeedReconciler) dropGoneFeeds(ctx context.Context, s *corev1.Secret) bool {
	var feeds v1alpha1.FlightFeedList
	if err := r.Client.List(ctx, &feeds, client.InNamespace(s.Namespace)); err != nil {
		return false
	}
	dropped := false
	for k := range s.Data {
		if !slices.ContainsFunc(feeds.Items, func(f v1alpha1.FlightFeed) bool { return f.Name == k && f.DeletionTimestamp.IsZero() }) {
			delete(s.Data, k)
			dropped = true
		}
	}
	return dropped
}

// dropScrapeToken removes the feed's key when its ServiceMonitor sends no
// token (turned off): no token of the feed is kept that nothing uses.
func (r *FlightFeedReconciler) dropScrapeToken(ctx context.Context, ff *v1alpha1.FlightFeed) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		key := types.NamespacedName{Namespace: ff.Namespace, Name: feednames.PumpScrapeTokens}
		if err := r.APIReader.Get(ctx, key, &s); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
				return nil
			}
			return fmt.Errorf("read secret %s: %w", key, err)
		}
		if _, ok := s.Data[ff.Name]; !ok || s.Labels[feednames.LabelManagedBy] != feednames.ManagedBy {
			return nil
		}
		delete(s.Data, ff.Name)
		return r.Client.Update(ctx, &s)
	})
}
