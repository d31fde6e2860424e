package scrapertoken

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	// AudiencesAnnotation on the Secret lists the feed audiences its token
	// was made for (comma-separated, sorted), besides the API server's.
	AudiencesAnnotation = "flightfeed.aero/token-audiences"
	// AudiencesRecheck is how often the Keeper looks for feeds whose
	// audience its token lacks (a new feed's pump is scraped from then on).
	AudiencesRecheck = time.Minute
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
	// Audiences lists the feed audiences (feednames.Audience) the token
	// must carry besides the API server's: the pump pods' /metrics takes
	// only a token made for its feed. The token is made again
	// when the list changes. Nil: the API server's audience alone.
	Audiences func(ctx context.Context) ([]string, error)
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
		if k.Audiences != nil {
			// New feeds are noticed without waiting for the renewal.
			next = minTime(next, c.Now().Add(AudiencesRecheck))
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
	var feeds []string
	if k.Audiences != nil {
		if feeds, err = k.Audiences(ctx); err != nil {
			return time.Time{}, fmt.Errorf("list the feeds' audiences for the scraper token: %w", err)
		}
		feeds = slices.Compact(slices.Sorted(slices.Values(feeds)))
	}
	sameFeeds := s.Annotations[AudiencesAnnotation] == strings.Join(feeds, ",")
	if len(s.Data[Key]) > 0 && !Due(now, expires, ttl) && sameFeeds {
		return RenewAt(expires, ttl), nil
	}
	var audiences []string
	if len(feeds) > 0 {
		// Naming audiences replaces the API server's own: it is asked
		// for first (the audience of a token requested without any), so
		// the token still scrapes the operator's /metrics.
		if audiences, err = k.apiServerAudiences(ctx); err != nil {
			return time.Time{}, err
		}
		audiences = append(audiences, feeds...)
	}
	tr, err := k.Client.CoreV1().ServiceAccounts(k.Namespace).CreateToken(ctx, k.ServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl / time.Second)), Audiences: audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("request a token of ServiceAccount %s/%s: %w", k.Namespace, k.ServiceAccount, err)
	}
	got := tr.Status.ExpirationTimestamp.UTC()
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[ExpiresAnnotation] = got.Format(time.RFC3339)
	if len(feeds) > 0 {
		s.Annotations[AudiencesAnnotation] = strings.Join(feeds, ",")
	} else {
		delete(s.Annotations, AudiencesAnnotation)
	}
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
	k.Log.Info("scraper token renewed", "secret", k.Namespace+"/"+k.Secret, "expires", got.Format(time.RFC3339), "feeds", len(feeds))
	return RenewAt(got, lifetime), nil
}

// apiServerAudiences are the audiences of a token the API server issues
// when none is asked for: the "aud" claim of such a token, requested for
// the shortest lifetime and never stored. (The claim is read, not
// verified: the token comes straight from the API server.)
func (k *Keeper) apiServerAudiences(ctx context.Context) ([]string, error) {
	tr, err := k.Client.CoreV1().ServiceAccounts(k.Namespace).CreateToken(ctx, k.ServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(MinTTL / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request a token of ServiceAccount %s/%s to learn the API server's audience: %w", k.Namespace, k.ServiceAccount, err)
	}
	aud, err := TokenAudiences(tr.Status.Token)
	if err != nil {
		return nil, fmt.Errorf("the API server's audience: %w", err)
	}
	return aud, nil
}

// TokenAudiences reads the "aud" claim of a JWT (a string or a list).
func TokenAudiences(token string) ([]string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("the token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("decode the token's claims: %w", err)
	}
	var claims struct {
		Aud json.RawMessage `json:"aud"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, fmt.Errorf("read the token's claims: %w", err)
	}
	var one string
	if json.Unmarshal(claims.Aud, &one) == nil && one != "" {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(claims.Aud, &many); err != nil || len(many) == 0 {
		return nil, errors.New("the token names no audience")
	}
	return many, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// TokenTimes reads the "iat" and "exp" claims of a JWT: when it was issued
// and when it expires (not verified: the token came from the API server,
// and this only says when to replace it, a third of its life before its
// end: RenewAt(expires, expires.Sub(issued))).
func TokenTimes(token string) (issued, expires time.Time, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, time.Time{}, errors.New("the token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("decode the token's claims: %w", err)
	}
	var claims struct {
		Iat int64 `json:"iat"`
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("read the token's claims: %w", err)
	}
	if claims.Exp == 0 || claims.Iat == 0 || claims.Exp <= claims.Iat {
		return time.Time{}, time.Time{}, errors.New("the token names no lifetime (iat, exp)")
	}
	return time.Unix(claims.Iat, 0).UTC(), time.Unix(claims.Exp, 0).UTC(), nil
}
