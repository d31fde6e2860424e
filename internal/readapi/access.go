package readapi

import (
	"context"
	"net/http"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/types"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/serving"
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
	// CreateVerifications rebuilds a day from its archive in the pump pod
	// and records the outcome (`kubectl flightfeed verify`).
	CreateVerifications = Permission{Verb: "create", Subresource: "verifications"}
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

// Decision is the outcome of an access check (serving.Access's).
type Decision = serving.Decision

// The decisions.
const (
	// Unauthenticated means no bearer token, or the API server does not accept it for the feed (401).
	Unauthenticated = serving.Unauthenticated
	// Forbidden means the token's user may not do what it asks on the feed (403).
	Forbidden = serving.Forbidden
	// Allowed means serve the request.
	Allowed = serving.Allowed
)

// ErrAccessCheck wraps a failure to ask the API server (503): nothing is
// decided and nothing is cached.
var ErrAccessCheck = serving.ErrAccessCheck

// ErrTooManyReviews is a token that would need a review while this pod
// already asks the API server ReviewRate times a second (429): a flood of
// unknown tokens is refused here, never passed on to the API server, which
// serves the feed's Lease renewals too. Decisions already cached are
// served as usual.
var ErrTooManyReviews = serving.ErrTooManyReviews

// Reviews of tokens not in the cache, per pod: ReviewRate a second with
// bursts of ReviewBurst (serving.Access's limits).
const (
	ReviewRate  = serving.ReviewRate
	ReviewBurst = serving.ReviewBurst
)

// Access decides whether a bearer token may use a feed's read API or
// /metrics, by asking the API server (serving.Access, its cache and its
// limit of new tokens): a TokenReview authenticates the token for the
// feed's audience (feednames.Audience: a token made for anything else, the
// API server included, is refused), a SubjectAccessReview authorizes its
// user for the Permission on the feed.
type Access struct {
	reviews *serving.Access
}

// NewAccess asks the API server through the given clients.
func NewAccess(tokens authnclient.TokenReviewInterface, sars authzclient.SubjectAccessReviewInterface, clk clock.PassiveClock) *Access {
	return &Access{reviews: serving.NewAccess(tokens, sars, clk)}
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

// Check decides whether token may do p on feed. user is the token's user
// name when the API server knows it ("" when it does not). An error
// (ErrAccessCheck, ErrTooManyReviews) means nothing was decided.
func (a *Access) Check(ctx context.Context, token string, p Permission, feed types.NamespacedName) (decision Decision, user string, err error) {
	return a.reviews.Check(ctx, token, p.request(feed))
}

// request is the question p on feed asks the API server.
func (p Permission) request(feed types.NamespacedName) serving.AccessRequest {
	r := serving.AccessRequest{Audience: feednames.Audience(feed)}
	if p.Path != "" {
		r.NonResource = &authorizationv1.NonResourceAttributes{Path: p.Path, Verb: p.Verb}
		return r
	}
	r.Resource = &authorizationv1.ResourceAttributes{
		Namespace: feed.Namespace, Verb: p.Verb, Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version,
		Resource: ReadResource, Subresource: p.Subresource, Name: feed.Name,
	}
	return r
}
