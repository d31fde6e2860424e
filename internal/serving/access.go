package serving

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// Decisions are cached this long: a revoked RoleBinding or a deleted
// ServiceAccount stops working within AccessAllowTTL, a new one starts
// working within AccessDenyTTL.
const (
	AccessAllowTTL = 10 * time.Second
	AccessDenyTTL  = 3 * time.Second
	// accessCacheMax bounds the cache; past it, expired entries are swept
	// and, if that is not enough, the cache starts over.
	accessCacheMax = 4096
	// accessTimeout bounds one TokenReview plus SubjectAccessReview.
	accessTimeout = 10 * time.Second
)

// Decision is the outcome of an access check.
type Decision int

const (
	// Unauthenticated means no bearer token, or the API server does not
	// accept it (401).
	Unauthenticated Decision = iota
	// Forbidden means the token's user may not do what it asks (403).
	Forbidden
	// Allowed means serve the request.
	Allowed
)

// ErrAccessCheck wraps a failure to ask the API server (503): nothing is
// decided and nothing is cached.
var ErrAccessCheck = errors.New("access check failed")

// ErrTooManyReviews is a token that would need a review while this process
// already asks the API server ReviewRate times a second (429): a flood of
// unknown tokens is refused here, never passed on to the API server.
// Decisions already cached are served as usual.
var ErrTooManyReviews = errors.New("too many new tokens to review")

// Reviews of tokens not in the cache, per process: ReviewRate a second
// with bursts of ReviewBurst. A review is a TokenReview and, for a valid
// token, a SubjectAccessReview; a scraper, a person's CLI or a consumer
// needs one per token and question every AccessAllowTTL at most.
const (
	ReviewRate  = 10
	ReviewBurst = 20
)

// AccessRequest is one question to the API server: is the token made for
// Audience, and may its user do what Resource (a resource's verb) or
// NonResource (a non-resource URL's) names?
type AccessRequest struct {
	// Audience the token must be made for; "" asks for the API server's
	// own audiences, as a kubeconfig's or a pod's token carries them.
	Audience    string
	Resource    *authorizationv1.ResourceAttributes
	NonResource *authorizationv1.NonResourceAttributes
}

// key is the cache key of token and r: a hash, so a memory dump of the
// cache does not hand out tokens.
func (r AccessRequest) key(token string) [sha256.Size]byte {
	parts := []string{token, r.Audience}
	if ra := r.Resource; ra != nil {
		parts = append(parts, "resource", ra.Namespace, ra.Verb, ra.Group, ra.Version, ra.Resource, ra.Subresource, ra.Name)
	}
	if nr := r.NonResource; nr != nil {
		parts = append(parts, "url", nr.Path, nr.Verb)
	}
	return sha256.Sum256([]byte(strings.Join(parts, "\x00")))
}

// Access decides whether a bearer token may do something by asking the API
// server: a TokenReview authenticates the token (for the request's
// audience), a SubjectAccessReview authorizes its user. It is the one
// check of the operator's /metrics and of a pump pod's read API and
// /metrics. Decisions are cached briefly, keyed by a SHA-256 of the token
// and the question: the token itself is neither kept nor logged; reviews
// of tokens not in the cache are limited to ReviewRate a second.
type Access struct {
	tokens authnclient.TokenReviewInterface
	sars   authzclient.SubjectAccessReviewInterface
	clock  clock.PassiveClock
	// reviews admits the reviews of tokens not in the cache
	// (ErrTooManyReviews past it).
	reviews flowcontrol.PassiveRateLimiter

	mu    sync.Mutex
	cache map[[sha256.Size]byte]cachedDecision
}

type cachedDecision struct {
	decision Decision
	// user names the token's user for logs; never the token.
	user    string
	expires time.Time
}

// NewAccess asks the API server through the given clients (clk nil: the
// real clock).
func NewAccess(tokens authnclient.TokenReviewInterface, sars authzclient.SubjectAccessReviewInterface, clk clock.PassiveClock) *Access {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Access{tokens: tokens, sars: sars, clock: clk, cache: map[[sha256.Size]byte]cachedDecision{},
		reviews: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(ReviewRate, ReviewBurst, clk)}
}

// Check decides r for token. user is the token's user name when the API
// server knows it ("" when it does not). An error (ErrAccessCheck,
// ErrTooManyReviews) means nothing was decided.
func (a *Access) Check(ctx context.Context, token string, r AccessRequest) (decision Decision, user string, err error) {
	if token == "" {
		return Unauthenticated, "", nil
	}
	key := r.key(token)
	now := a.clock.Now()
	a.mu.Lock()
	if c, ok := a.cache[key]; ok && now.Before(c.expires) {
		a.mu.Unlock()
		return c.decision, c.user, nil
	}
	a.mu.Unlock()

	if !a.reviews.TryAccept() {
		return Unauthenticated, "", ErrTooManyReviews
	}
	ctx, cancel := context.WithTimeout(ctx, accessTimeout)
	defer cancel()
	decision, user, err = a.ask(ctx, token, r)
	if err != nil {
		return Unauthenticated, "", err
	}
	ttl := AccessDenyTTL
	if decision == Allowed {
		ttl = AccessAllowTTL
	}
	a.remember(key, cachedDecision{decision: decision, user: user, expires: now.Add(ttl)}, now)
	return decision, user, nil
}

// ask runs the TokenReview and, for an authenticated user, the
// SubjectAccessReview.
func (a *Access) ask(ctx context.Context, token string, r AccessRequest) (Decision, string, error) {
	spec := authenticationv1.TokenReviewSpec{Token: token}
	if r.Audience != "" {
		spec.Audiences = []string{r.Audience}
	}
	tr, err := a.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		// The client's error names the request, never its body (the token).
		return Unauthenticated, "", fmt.Errorf("%w: token review: %w", ErrAccessCheck, err)
	}
	// An authenticator that ignores audiences answers without any: the
	// token is good only when the API server says it is good for ours.
	if !tr.Status.Authenticated || (r.Audience != "" && !slices.Contains(tr.Status.Audiences, r.Audience)) {
		return Unauthenticated, "", nil
	}
	u := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.sars.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		ResourceAttributes: r.Resource, NonResourceAttributes: r.NonResource,
	}}, metav1.CreateOptions{})
	if err != nil {
		return Unauthenticated, "", fmt.Errorf("%w: subject access review for %s: %w", ErrAccessCheck, u.Username, err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return Forbidden, u.Username, nil
	}
	return Allowed, u.Username, nil
}

func (a *Access) remember(key [sha256.Size]byte, c cachedDecision, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= accessCacheMax {
		for k, old := range a.cache {
			if !now.Before(old.expires) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= accessCacheMax {
			clear(a.cache)
		}
	}
	a.cache[key] = c
}
