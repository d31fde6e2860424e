package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/secretconsent"
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
// v1alpha1.FeedsAnnotation — keeps the host and port and drops the rest at
// once; it never logs or reports a DSN. A Secret that is missing, refused
// or unreadable opens nothing (the pump does not start without it, and
// says why); the next resync looks again.
func (r *FlightFeedReconciler) dependencyAddresses(ctx context.Context, ff *v1alpha1.FlightFeed) (mailbox, database []string, err error) {
	read := func(ref v1alpha1.SecretKeyRef) (string, error) {
		var s corev1.Secret
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ff.Namespace, Name: ref.Name}, &s)
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
			logf.FromContext(ctx).V(1).Info("a DSN Secret opens no egress", "secret", ref.Name, "why", err.Error())
			return "", nil
		case err != nil:
			return "", fmt.Errorf("read secret %s/%s for the pump pods' egress: %w", ff.Namespace, ref.Name, err)
		}
		v, present := s.Annotations[v1alpha1.FeedsAnnotation]
		if _, ferr := secretconsent.CheckFeed(v, present, ff.Name); ferr != nil || s.Labels[v1alpha1.SecretLabel] != "true" {
			return "", nil
		}
		return string(s.Data[ref.Key]), nil
	}
	dsn, err := read(ff.Spec.Mailbox.DSNSecretRef)
	if err != nil {
		return nil, nil, err
	}
	if a := config.MailboxAddress(dsn); a != "" {
		mailbox = append(mailbox, a)
	}
	refs := []v1alpha1.SecretKeyRef{ff.Spec.Database.DSNSecretRef}
	if r := ff.Spec.Database.ReadDSNSecretRef; r != nil {
		refs = append(refs, *r)
	}
	for _, ref := range refs {
		dsn, err := read(ref)
		if err != nil {
			return nil, nil, err
		}
		for _, a := range config.DatabaseAddresses(dsn) {
			if !slices.Contains(database, a) {
				database = append(database, a)
			}
		}
	}
	return mailbox, database, nil
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

// apiServerAddresses are the API server's addresses as a pod reaches it:
// the ClusterIP(s) of the Service kubernetes in namespace default and the
// endpoints of its EndpointSlice of the same name (most CNIs judge a
// connection after the Service address is translated). The chart grants
// get on those two objects alone. An error means unknown; fresh says the
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
	var out []netip.Addr
	add := func(s string) {
		if ip, err := netip.ParseAddr(s); err == nil && !slices.Contains(out, ip.Unmap()) {
			out = append(out, ip.Unmap())
		}
	}
	for _, ip := range svc.Spec.ClusterIPs {
		add(ip)
	}
	if len(svc.Spec.ClusterIPs) == 0 {
		add(svc.Spec.ClusterIP)
	}
	endpoints := 0
	for _, e := range slice.Endpoints {
		for _, a := range e.Addresses {
			add(a)
			endpoints++
		}
	}
	if endpoints == 0 {
		return nil, errors.New("endpointslice default/kubernetes lists no address")
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out, nil
}
