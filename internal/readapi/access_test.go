package readapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flightfeed/flightfeed/internal/serving"
)

// reviews answers TokenReviews and SubjectAccessReviews as an API server
// would for two users, counting the calls: the envtest tests prove the
// real API server's answers, this one the cache around them.
type reviews struct {
	tokenReviews, accessReviews int
	fail                        bool
	// ignoreAudience answers as an authenticator that knows no audiences.
	ignoreAudience bool
	// audiences are the audiences the TokenReviews asked for.
	audiences []string
}

func (r *reviews) client() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r.tokenReviews++
		if r.fail {
			return true, nil, errors.New("connection refused")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		r.audiences = append(r.audiences, tr.Spec.Audiences...)
		// Tokens are made for one audience, as kubectl create token
		// --audience makes them; the API server says a token is
		// authenticated for the audiences asked that it carries.
		tokenAudience := map[string]string{
			"alice-token": "flightfeed.aero/airport/pek", "alice-pvg-token": "flightfeed.aero/airport/pvg",
			"bob-token": "flightfeed.aero/airport/pek", "alice-apiserver-token": "https://kubernetes.default.svc",
		}[tr.Spec.Token]
		user := strings.SplitN(tr.Spec.Token, "-", 2)[0]
		if tokenAudience == "" || !slices.Contains(tr.Spec.Audiences, tokenAudience) {
			tr.Status = authenticationv1.TokenReviewStatus{Error: "token audiences do not match"}
			if r.ignoreAudience && tokenAudience != "" {
				// An authenticator that does not know audiences (a
				// webhook, say) answers without any.
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: user}}
			}
			return true, tr, nil
		}
		tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: user}, Audiences: []string{tokenAudience}}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r.accessReviews++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra := sar.Spec.ResourceAttributes
		// alice may read pek's flights and messages, and nothing else.
		sar.Status.Allowed = sar.Spec.User == "alice" && ra.Namespace == "airport" && ra.Verb == "get" &&
			ra.Group == "flightfeed.aero" && ra.Resource == "flightfeeds" && (ra.Subresource == "flights" || ra.Subresource == "messages") && ra.Name == "pek"
		return true, sar, nil
	})
	return c
}

func TestAccessDecidesAndCachesBriefly(t *testing.T) {
	r := &reviews{}
	c := r.client()
	clk := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	a := NewAccess(c.AuthenticationV1().TokenReviews(), c.AuthorizationV1().SubjectAccessReviews(), clk)
	ctx := context.Background()
	check := func(token, ns, name string, want Decision) {
		t.Helper()
		got, _, err := a.Check(ctx, token, ReadFlights, types.NamespacedName{Namespace: ns, Name: name})
		if err != nil || got != want {
			t.Fatalf("Check(%s, %s/%s) = %v, %v; want %v", token, ns, name, got, err, want)
		}
	}
	check("", "airport", "pek", Unauthenticated)
	if r.tokenReviews != 0 {
		t.Fatalf("no token, yet %d TokenReviews", r.tokenReviews)
	}
	check("forged", "airport", "pek", Unauthenticated)
	check("bob-token", "airport", "pek", Forbidden)
	check("alice-token", "airport", "pek", Allowed)
	// A token made for pek is no token at all for another feed: its
	// audience is pek's.
	check("alice-token", "airport", "pvg", Unauthenticated)
	check("alice-token", "other", "pek", Unauthenticated)
	// One made for pvg authenticates there; alice may not read pvg.
	check("alice-pvg-token", "airport", "pvg", Forbidden)
	calls := r.tokenReviews
	// Within the TTLs every answer is remembered.
	clk.Step(serving.AccessDenyTTL - time.Second)
	check("forged", "airport", "pek", Unauthenticated)
	check("bob-token", "airport", "pek", Forbidden)
	check("alice-token", "airport", "pek", Allowed)
	if r.tokenReviews != calls {
		t.Fatalf("cached answers asked the API server again (%d TokenReviews, was %d)", r.tokenReviews, calls)
	}
	// Refusals expire first: a new RoleBinding works soon.
	clk.Step(2 * time.Second)
	check("bob-token", "airport", "pek", Forbidden)
	check("alice-token", "airport", "pek", Allowed)
	if r.tokenReviews != calls+1 {
		t.Fatalf("after the deny TTL: %d TokenReviews, want %d", r.tokenReviews, calls+1)
	}
	clk.Step(serving.AccessAllowTTL)
	check("alice-token", "airport", "pek", Allowed)
	if r.tokenReviews != calls+2 {
		t.Fatalf("after the allow TTL: %d TokenReviews, want %d", r.tokenReviews, calls+2)
	}
	// (The cache holds hashes, never a token: serving's
	// TestAccessCachesHashesAndNoFailure.)
	// The API server down: an error, nothing decided, nothing cached: the
	// API server back, the token is reviewed at once.
	r.fail = true
	pek := types.NamespacedName{Namespace: "airport", Name: "pek"}
	if _, _, err := a.Check(ctx, "carol-token", ReadFlights, pek); !errors.Is(err, ErrAccessCheck) || strings.Contains(err.Error(), "carol-token") {
		t.Fatalf("API server down: %v", err)
	}
	r.fail = false
	calls = r.tokenReviews
	check("carol-token", "airport", "pek", Unauthenticated)
	if r.tokenReviews != calls+1 {
		t.Fatal("a failed check was cached")
	}
}

// A token is good for one feed's read API only: the TokenReview asks for
// the feed's audience, and a token made for the API server (what a
// kubeconfig or a pod's default token carries), for another feed, or
// answered without audiences by an authenticator that ignores them, is
// refused. The permission is checked as asked: reading messages is not
// recording a replay.
func TestAccessWantsTheFeedsAudienceAndThePermissionAsked(t *testing.T) {
	r := &reviews{}
	c := r.client()
	a := NewAccess(c.AuthenticationV1().TokenReviews(), c.AuthorizationV1().SubjectAccessReviews(), clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0)))
	pek := types.NamespacedName{Namespace: "airport", Name: "pek"}
	for _, tc := range []struct {
		token string
		p     Permission
		want  Decision
	}{
		{"alice-token", ReadFlights, Allowed},
		{"alice-token", ReadMessages, Allowed},
		{"alice-token", CreateReplays, Forbidden},
		{"alice-token", ReadReplays, Forbidden},
		{"alice-apiserver-token", ReadFlights, Unauthenticated},
		{"alice-pvg-token", ReadFlights, Unauthenticated},
	} {
		got, _, err := a.Check(t.Context(), tc.token, tc.p, pek)
		if err != nil || got != tc.want {
			t.Errorf("Check(%s, %s) = %v, %v; want %v", tc.token, tc.p, got, err, tc.want)
		}
	}
	for _, aud := range r.audiences {
		if aud != "flightfeed.aero/airport/pek" {
			t.Errorf("a TokenReview asked for audience %q", aud)
		}
	}
	if len(r.audiences) == 0 {
		t.Fatal("no TokenReview named an audience")
	}
	r.ignoreAudience = true
	if got, _, err := a.Check(t.Context(), "alice-apiserver-token", ReadMessages, pek); err != nil || got != Unauthenticated {
		t.Errorf("an answer without audiences: %v, %v; want Unauthenticated", got, err)
	}
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct{ header, proxied, want string }{
		{"", "", ""},
		{"Bearer abc", "", "abc"},
		{"bearer  abc ", "", "abc"},
		{"Basic abc", "", ""},
		{"Bearer", "", ""},
		// Through the service proxy the API server has taken
		// Authorization; the token comes in TokenHeader.
		{"", "Bearer xyz", "xyz"},
		{"Basic abc", "Bearer xyz", "xyz"},
		{"Bearer abc", "Bearer xyz", "abc"},
		{"", "xyz", ""},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		if tc.proxied != "" {
			r.Header.Set(TokenHeader, tc.proxied)
		}
		if got := BearerToken(r); got != tc.want {
			t.Errorf("%q, %q: %q, want %q", tc.header, tc.proxied, got, tc.want)
		}
	}
}
