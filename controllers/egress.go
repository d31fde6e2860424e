package controllers

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feedobjects"
)

// DependencyResync is how often a feed with a NetworkPolicy is reconciled
// again to read its DSNs' hosts anew (the pump pods read their Secrets
// again every --secret-resync-period, 1m by default): a DSN moved to
// another host is opened within that period.
const DependencyResync = time.Minute

// dependencyAddresses are the host:port the feed's mailbox and database
// DSNs connect to, for the pump pods' egress. The operator reads each DSN
// Secret by name (uncached, with the get it holds in the feed's namespace
// to grant it to the pump), only when it carries the consent the pump
// requires — the label v1alpha1.SecretLabel=true and the feed named in
// v1alpha1.FeedsAnnotation (feedobjects.ConsentedDSN) — keeps the host and
// port (feedobjects.DependencyAddresses) and drops the rest at
// once; it never logs or reports a DSN. A Secret that is missing, refused
// or unreadable opens nothing (the pump does not start without it, and
// says why); the next resync looks again.
func (r *FlightFeedReconciler) dependencyAddresses(ctx context.Context, ff *v1alpha1.FlightFeed) (mailbox, database []string, err error) {
	return feedobjects.DependencyAddresses(ff, func(ref v1alpha1.SecretKeyRef) (string, error) {
		var s corev1.Secret
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ff.Namespace, Name: ref.Name}, &s)
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
			logf.FromContext(ctx).V(1).Info("a DSN Secret opens no egress", "secret", ref.Name, "why", err.Error())
			return "", nil
		case err != nil:
			return "", fmt.Errorf("read secret %s/%s for the pump pods' egress: %w", ff.Namespace, ref.Name, err)
		}
		return feedobjects.ConsentedDSN(&s, ff.Name, ref.Key), nil
	})
}

// apiServerCache remembers the API server's addresses for a minute: every
// feed's reconcile needs them, and they seldom change.
type apiServerCache struct {
	mu      sync.Mutex
	addrs   []netip.Addr
	err     error
	fetched time.Time
}

// apiServerTTL is how long the looked-up addresses are used.
const apiServerTTL = time.Minute

// apiServerAddresses are the API server's addresses as a pod reaches it
// (feedobjects.APIServerAddresses of the Service kubernetes in namespace
// default and its EndpointSlice of the same name: the chart grants get on
// those two objects alone). An error means unknown; fresh says the
// answer was looked up now, not remembered.
func (r *FlightFeedReconciler) apiServerAddresses(ctx context.Context) (addrs []netip.Addr, fresh bool, err error) {
	c := &r.apiServer
	c.mu.Lock()
	defer c.mu.Unlock()
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if !c.fetched.IsZero() && clk.Since(c.fetched) < apiServerTTL {
		return c.addrs, false, c.err
	}
	c.addrs, c.err = r.lookUpAPIServer(ctx)
	c.fetched = clk.Now()
	return c.addrs, true, c.err
}

func (r *FlightFeedReconciler) lookUpAPIServer(ctx context.Context) ([]netip.Addr, error) {
	key := types.NamespacedName{Namespace: "default", Name: "kubernetes"}
	var svc corev1.Service
	if err := r.APIReader.Get(ctx, key, &svc); err != nil {
		return nil, fmt.Errorf("get service %s: %w", key, err)
	}
	var slice discoveryv1.EndpointSlice
	if err := r.APIReader.Get(ctx, key, &slice); err != nil {
		return nil, fmt.Errorf("get endpointslice %s: %w", key, err)
	}
	return feedobjects.APIServerAddresses(&svc, &slice)
}
