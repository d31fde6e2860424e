package pumpserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
)

// Permission is what a read API caller needs: a verb on a (virtual)
// subresource of the feed, in the feed's namespace. RBAC accepts rules for subresources the
// API server does not serve, so a Role with
//
//   - apiGroups: ["flightfeed.aero"]
//     resources: ["flightfeeds/flights"]
//     verbs: ["get"]
//
// lets its subjects read the flights of the namespace's feeds (resourceNames
// narrows it to some feeds), and nothing else: it grants no access to the
// FlightFeed objects themselves.
type Permission struct {
	Verb        string
	Subresource string
	// Path, when set, makes the permission a non-resource URL's (the
	// metrics endpoint's "/metrics", as the scrapers' ClusterRole grants
	// it) instead of a subresource of the feed.
	Path string
}

// ScrapeMetrics reads the pump pod's /metrics: the non-resource URL the
// chart's metrics-reader ClusterRole grants, with a token for the feed's
// audience (feednames.Audience) like the read API's.
var ScrapeMetrics = Permission{Verb: "get", Path: "/metrics"}

// The read API's permissions, all on subresources of ReadResource.
var (
	// ReadFlights reads the flights (the consumers' API).
	ReadFlights = Permission{Verb: "get", Subresource: "flights"}
	// ReadMessages lists the DEAD and FAILED messages and the parked
	// outbox events (`flightfeed dead`, `flightfeed parked`).
	ReadMessages = Permission{Verb: "get", Subresource: "messages"}
	// ReadReplays reads a replay request's outcome.
	ReadReplays = Permission{Verb: "get", Subresource: "replays"}
	// CreateReplays records a replay of a DEAD message or makes parked
	// events PENDING again (`flightfeed replay`, `parked --redeliver`).
	CreateReplays = Permission{Verb: "create", Subresource: "replays"}
)

// ReadResource is the resource whose subresources the permissions name.
const ReadResource = "flightfeeds"

// String is the permission as a Role rule says it: "get flightfeeds/flights".
func (p Permission) String() string {
	if p.Path != "" {
		return p.Verb + " " + p.Path
	}
	return p.Verb + " " + ReadResource + "/" + p.Subresource
}

// TokenHeader carries the caller's token ("Bearer <token>") when the
// request comes through the API server's service proxy: the API server
// authenticates its own caller by the Authorization header and drops it
// before proxying, so the read API's token travels in a header of its own.
// A direct caller may use either.
const TokenHeader = "X-Flightfeed-Authorization" //nolint:gosec // G101: a header's name, not a credential

// Decisions are cached this long: a revoked RoleBinding or a deleted
// ServiceAccount stops working within accessAllowTTL, a new one starts
// working within accessDenyTTL.
const (
	accessAllowTTL = 10 * time.Second
	accessDenyTTL  = 3 * time.Second
	// accessCacheMax bounds the cache; past it, expired entries are swept
	// and, if that is not enough, the cache starts over.
	accessCacheMax = 4096
	// accessTimeout bounds one TokenReview plus SubjectAccessReview.
	accessTimeout = 10 * time.Second
)

// Decision is the outcome of an access check.
type Decision int

const (
	// Unauthenticated means no bearer token, or the API server does not accept it (401).
	Unauthenticated Decision = iota
	// Forbidden means the token's user may not read the feed's flights (403).
	Forbidden
	// Allowed means serve the request.
	Allowed
)

// ErrAccessCheck wraps a failure to ask the API server (503): nothing is
// decided and nothing is cached.
var ErrAccessCheck = errors.New("access check failed")

// ErrTooManyReviews is a token that would need a review while this pod
// already asks the API server ReviewRate times a second (429): a flood of
// unknown tokens is refused here, never passed on to the API server, which
// serves the feed's Lease renewals too. Decisions already cached are
// served as usual.
var ErrTooManyReviews = errors.New("too many new tokens to review")

// Reviews of tokens not in the cache, per pod: ReviewRate a second with
// bursts of ReviewBurst. A review is a TokenReview and, for a valid token,
// a SubjectAccessReview; a person's CLI or a consumer needs one per token
// and feed every accessAllowTTL at most.
const (
	ReviewRate  = 10
	ReviewBurst = 20
)

// Access decides whether a bearer token may use a feed's read API, by
// asking the API server: a TokenReview authenticates the token for the
// feed's audience (feednames.Audience: a token made for anything else, the
// API server included, is refused), a SubjectAccessReview authorizes its
// user for the Permission on the feed. Decisions are cached briefly, keyed
// by a SHA-256 of the token, the permission and the feed: the token itself
// is neither kept nor logged.
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

// NewAccess asks the API server through the given clients.
func NewAccess(tokens authnclient.TokenReviewInterface, sars authzclient.SubjectAccessReviewInterface, clk clock.PassiveClock) *Access {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Access{tokens: tokens, sars: sars, clock: clk, cache: map[[sha256.Size]byte]cachedDecision{},
		reviews: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(ReviewRate, ReviewBurst, clk)}
}

// BearerToken is the token of an "Authorization: Bearer" header, else of a
// TokenHeader one (the service proxy's way), or "".
func BearerToken(r *http.Request) string {
	for _, h := range []string{"Authorization", TokenHeader} {
		scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get(h)), " ")
		if ok && strings.EqualFold(scheme, "bearer") && strings.TrimSpace(token) != "" {
			return strings.TrimSpace(token)
		}
	}
	return ""
}

// accessKey is the cache key: a hash, so a memory dump of the cache does
// not hand out tokens.
func accessKey(token string, p Permission, feed types.NamespacedName) [sha256.Size]byte {
	return sha256.Sum256([]byte(token + "\x00" + p.Verb + "\x00" + p.Subresource + "\x00" + p.Path + "\x00" + feed.Namespace + "\x00" + feed.Name))
}

// Check decides whether token may do p on feed. user is the token's user
// name when the API server knows it ("" when it does not). An error
// (ErrAccessCheck) means the API server could not be asked.
func (a *Access) Check(ctx context.Context, token string, p Permission, feed types.NamespacedName) (decision Decision, user string, err error) {
	if token == "" {
		return Unauthenticated, "", nil
	}
	key := accessKey(token, p, feed)
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
	decision, user, err = a.ask(ctx, token, p, feed)
	if err != nil {
		return Unauthenticated, "", err
	}
	ttl := accessDenyTTL
	if decision == Allowed {
		ttl = accessAllowTTL
	}
	a.remember(key, cachedDecision{decision: decision, user: user, expires: now.Add(ttl)}, now)
	return decision, user, nil
}

// ask runs the TokenReview and, for an authenticated user, the
// SubjectAccessReview.
func (a *Access) ask(ctx context.Context, token string, p Permission, feed types.NamespacedName) (Decision, string, error) {
	audience := feednames.Audience(feed)
	tr, err := a.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{audience}}}, metav1.CreateOptions{})
	if err != nil {
		// The client's error names the request, never its body (the token).
		return Unauthenticated, "", fmt.Errorf("%w: token review: %w", ErrAccessCheck, err)
	}
	// An authenticator that ignores audiences answers without any: the
	// token is good only when the API server says it is good for ours.
	if !tr.Status.Authenticated || !slices.Contains(tr.Status.Audiences, audience) {
		return Unauthenticated, "", nil
	}
	u := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	spec := authorizationv1.SubjectAccessReviewSpec{User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}
	if p.Path != "" {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: p.Path, Verb: p.Verb}
	} else {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: feed.Namespace, Verb: p.Verb, Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version,
			Resource: ReadResource, Subresource: p.Subresource, Name: feed.Name,
		}
	}
	sar, err := a.sars.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
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
