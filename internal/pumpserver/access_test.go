package pumpserver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// reviews answers TokenReviews and SubjectAccessReviews as an API server
// would for two users, counting the calls: the envtest tests prove the
// real API server's answers, this one the cache around them.
type reviews struct {
	tokenReviews, accessReviews int
	fail                        bool
}

func (r *reviews) client() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r.tokenReviews++
		if r.fail {
			return true, nil, errors.New("connection refused")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		switch tr.Spec.Token {
		case "alice-token":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice"}}
		case "bob-token":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "bob"}}
		}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r.accessReviews++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "alice" && ra.Namespace == "airport" && ra.Verb == "get" &&
			ra.Group == "flightfeed.aero" && ra.Resource == "flightfeeds" && ra.Subresource == "flights" && ra.Name == "pek"
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
		got, _, err := a.Check(ctx, token, ns, name)
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
	check("alice-token", "airport", "pvg", Forbidden)
	check("alice-token", "other", "pek", Forbidden)
	calls := r.tokenReviews
	// Within the TTLs every answer is remembered.
	clk.Step(accessDenyTTL - time.Second)
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
	clk.Step(accessAllowTTL)
	check("alice-token", "airport", "pek", Allowed)
	if r.tokenReviews != calls+2 {
		t.Fatalf("after the allow TTL: %d TokenReviews, want %d", r.tokenReviews, calls+2)
	}
	// The cache holds hashes, never a token.
	for k := range a.cache {
		if strings.Contains(string(k[:]), "alice-token") {
			t.Fatal("a token in the cache")
		}
	}
	// The API server down: an error, nothing decided, nothing cached.
	r.fail = true
	if _, _, err := a.Check(ctx, "carol-token", "airport", "pek"); !errors.Is(err, ErrAccessCheck) || strings.Contains(err.Error(), "carol-token") {
		t.Fatalf("API server down: %v", err)
	}
	if _, ok := a.cache[accessKey("carol-token", "airport", "pek")]; ok {
		t.Fatal("a failed check was cached")
	}
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{"", ""},
		{"Bearer abc", "abc"},
		{"bearer  abc ", "abc"},
		{"Basic abc", ""},
		{"Bearer", ""},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		if got := BearerToken(r); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.header, got, tc.want)
		}
	}
}
