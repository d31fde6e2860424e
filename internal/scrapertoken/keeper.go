package scrapertoken

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

const (
	// Key is the Secret's key holding the token (the chart's
	// ServiceMonitor reads it).
	Key = "token"
	// ExpiresAnnotation on the Secret is when its token expires (RFC 3339,
	// as the API server answered the TokenRequest).
	ExpiresAnnotation = "flightfeed.aero/token-expires"
	// DefaultTTL is a token's requested lifetime.
	DefaultTTL = 24 * time.Hour
	// MinTTL is the shortest lifetime the API server issues.
	MinTTL = 10 * time.Minute
)

// retry bounds the wait after a failed renewal.
const (
	retryFirst = time.Second
	retryMax   = time.Minute
)

// Due reports whether a token expiring at expires (zero: none or unknown)
// must be replaced at now: it must once less than a third of ttl is left.
func Due(now, expires time.Time, ttl time.Duration) bool {
	return expires.IsZero() || !now.Before(RenewAt(expires, ttl))
}

// RenewAt is when a token expiring at expires is replaced.
func RenewAt(expires time.Time, ttl time.Duration) time.Time {
	return expires.Add(-ttl / 3)
}

// Keeper keeps Secret's Key a live token of ServiceAccount, both in
// Namespace. It is a controller-runtime Runnable that runs on the leader.
type Keeper struct {
	Client                            kubernetes.Interface
	Namespace, ServiceAccount, Secret string
	TTL                               time.Duration    // default DefaultTTL
	Clock                             clock.WithTicker // default the real clock
	Log                               logr.Logger
}

// Validate reports a Keeper that cannot work.
func (k *Keeper) Validate() error {
	switch {
	case k.Namespace == "" || k.ServiceAccount == "" || k.Secret == "":
		return errors.New("scraper token: the namespace, ServiceAccount and Secret are all required")
	case k.TTL != 0 && k.TTL < MinTTL:
		return fmt.Errorf("scraper token: a lifetime of %s is shorter than the %s the API server issues", k.TTL, MinTTL)
	}
	return nil
}

func (k *Keeper) ttl() time.Duration {
	if k.TTL == 0 {
		return DefaultTTL
	}
	return k.TTL
}

func (k *Keeper) clock() clock.WithTicker {
	if k.Clock == nil {
		return clock.RealClock{}
	}
	return k.Clock
}

// NeedLeaderElection is true: one replica writes the Secret.
func (k *Keeper) NeedLeaderElection() bool { return true }

// Start renews the token whenever it is due until ctx ends; a failed
// renewal is logged and retried with backoff (the old token stays valid
// for a third of its lifetime).
func (k *Keeper) Start(ctx context.Context) error {
	if err := k.Validate(); err != nil {
		return err
	}
	c := k.clock()
	wait := retryFirst
	for {
		next, err := k.Renew(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			k.Log.Error(err, "scraper token not renewed; retrying", "secret", k.Namespace+"/"+k.Secret, "in", wait.String())
			next, wait = c.Now().Add(wait), min(2*wait, retryMax)
		} else {
			wait = retryFirst
		}
		t := c.NewTimer(max(next.Sub(c.Now()), 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// Renew writes a new token into the Secret when the one there is due
// (missing, unreadable, or less than a third of its lifetime left), and
// returns when the token there must next be replaced.
func (k *Keeper) Renew(ctx context.Context) (time.Time, error) {
	secrets := k.Client.CoreV1().Secrets(k.Namespace)
	s, err := secrets.Get(ctx, k.Secret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return time.Time{}, fmt.Errorf("scraper token Secret %s/%s does not exist (the chart makes it with monitoring.serviceMonitor): %w", k.Namespace, k.Secret, err)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read scraper token Secret %s/%s: %w", k.Namespace, k.Secret, err)
	}
	now, ttl := k.clock().Now(), k.ttl()
	expires, _ := time.Parse(time.RFC3339, s.Annotations[ExpiresAnnotation])
	if len(s.Data[Key]) > 0 && !Due(now, expires, ttl) {
		return RenewAt(expires, ttl), nil
	}
	tr, err := k.Client.CoreV1().ServiceAccounts(k.Namespace).CreateToken(ctx, k.ServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("request a token of ServiceAccount %s/%s: %w", k.Namespace, k.ServiceAccount, err)
	}
	got := tr.Status.ExpirationTimestamp.UTC()
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[ExpiresAnnotation] = got.Format(time.RFC3339)
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[Key] = []byte(tr.Status.Token)
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("write scraper token Secret %s/%s: %w", k.Namespace, k.Secret, err)
	}
	// The API server may grant a shorter lifetime than asked (its
	// --service-account-max-token-expiration): then renew by what it
	// granted (a minute's slack for the time the request took).
	lifetime := ttl
	if granted := got.Sub(now); granted < ttl-time.Minute {
		lifetime = granted
	}
	k.Log.Info("scraper token renewed", "secret", k.Namespace+"/"+k.Secret, "expires", got.Format(time.RFC3339))
	return RenewAt(got, lifetime), nil
}
