package serving

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// apiServer answers TokenReviews and SubjectAccessReviews as an API server
// would, counting them: "scraper-token" and "outsider-token" are tokens it
// issued for its own audience, "feed-token" one made for a feed only; the
// scraper may get /metrics. The envtest tests prove the real API server's
// answers, this one the checks around them.
type apiServer struct {
	tokenReviews int
	fail         bool
	// audiences are those the TokenReviews asked for; sars the
	// SubjectAccessReviews' specs.
	audiences [][]string
	sars      []authorizationv1.SubjectAccessReviewSpec
}

const apiServerAudience = "https://kubernetes.default.svc"

func (s *apiServer) access(clk *clocktesting.FakeClock) *Access {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.tokenReviews++
		if s.fail {
			return true, nil, errors.New("connection refused")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		s.audiences = append(s.audiences, tr.Spec.Audiences)
		made := map[string]string{"scraper-token": apiServerAudience, "outsider-token": apiServerAudience, "feed-token": "flightfeed.aero/airport/pek"}[tr.Spec.Token]
		// No audiences asked: the API server's own.
		asked := tr.Spec.Audiences
		if len(asked) == 0 {
			asked = []string{apiServerAudience}
		}
		if made == "" || !slices.Contains(asked, made) {
			tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
			return true, tr, nil
		}
		user := strings.TrimSuffix(tr.Spec.Token, "-token")
		tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{made},
			User: authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:" + user, UID: "uid-" + user,
				Groups: []string{"system:serviceaccounts"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		s.sars = append(s.sars, sar.Spec)
		nr := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:monitoring:scraper" && nr != nil && nr.Path == "/metrics" && nr.Verb == "get"
		return true, sar, nil
	})
	return NewAccess(c.AuthenticationV1().TokenReviews(), c.AuthorizationV1().SubjectAccessReviews(), clk)
}

// The cache holds hashes, never a token; a check the API server could not
// answer decides nothing and is not cached.
func TestAccessCachesHashesAndNoFailure(t *testing.T) {
	s := &apiServer{}
	clk := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	a := s.access(clk)
	metrics := AccessRequest{NonResource: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}
	if d, _, err := a.Check(t.Context(), "scraper-token", metrics); err != nil || d != Allowed {
		t.Fatalf("scraper: %v, %v", d, err)
	}
	for k := range a.cache {
		if strings.Contains(string(k[:]), "scraper-token") {
			t.Fatal("a token in the cache")
		}
	}
	s.fail = true
	if _, _, err := a.Check(t.Context(), "outsider-token", metrics); !errors.Is(err, ErrAccessCheck) || strings.Contains(err.Error(), "outsider-token") {
		t.Fatalf("API server down: %v", err)
	}
	if _, ok := a.cache[metrics.key("outsider-token")]; ok {
		t.Fatal("a failed check was cached")
	}
	// Within the allow TTL the scraper is not asked about again.
	calls := s.tokenReviews
	clk.Step(AccessAllowTTL - time.Second)
	if d, _, err := a.Check(t.Context(), "scraper-token", metrics); err != nil || d != Allowed || s.tokenReviews != calls {
		t.Fatalf("cached scraper: %v, %v, %d TokenReviews (was %d)", d, err, s.tokenReviews, calls)
	}
}

// Without an audience (the operator's /metrics) a token the API server
// issued for itself passes and one made for a feed only does not; the
// SubjectAccessReview asks for the non-resource URL as the user the
// TokenReview named, groups, UID and extras included.
func TestAccessWithoutAudienceAsksForTheAPIServers(t *testing.T) {
	s := &apiServer{}
	a := s.access(clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0)))
	metrics := AccessRequest{NonResource: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}
	for token, want := range map[string]Decision{"": Unauthenticated, "forged": Unauthenticated, "feed-token": Unauthenticated,
		"outsider-token": Forbidden, "scraper-token": Allowed} {
		if got, _, err := a.Check(t.Context(), token, metrics); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", token, got, err, want)
		}
	}
	for _, aud := range s.audiences {
		if len(aud) != 0 {
			t.Errorf("a TokenReview asked for audiences %v", aud)
		}
	}
	i := slices.IndexFunc(s.sars, func(spec authorizationv1.SubjectAccessReviewSpec) bool {
		return spec.User == "system:serviceaccount:monitoring:scraper"
	})
	if i < 0 {
		t.Fatal("no SubjectAccessReview for the scraper")
	}
	if spec := s.sars[i]; spec.UID != "uid-scraper" || !slices.Equal(spec.Groups, []string{"system:serviceaccounts"}) ||
		!slices.Equal(spec.Extra["k"], authorizationv1.ExtraValue{"v"}) || spec.ResourceAttributes != nil {
		t.Errorf("the scraper's SubjectAccessReview: %+v", spec)
	}
}

// RequireToken answers 401 without a bearer token or with one the API
// server refuses (controller-runtime's metrics filter answered 500 to the
// latter), 403 for a user without get /metrics, the handler for one with
// it; 503 when the API server does not answer.
func TestRequireTokenAnswers(t *testing.T) {
	s := &apiServer{}
	h := RequireToken(s.access(clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))), logr.Discard(),
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	serve := func(method, path, authorization string) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(context.Background(), method, path, nil)
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		method, path, authorization string
		code                        int
	}{
		{"GET", "/metrics", "", http.StatusUnauthorized},
		{"GET", "/metrics", "Bearer forged", http.StatusUnauthorized},
		{"GET", "/metrics", "Basic c2NyYXBlcg==", http.StatusUnauthorized},
		{"GET", "/metrics", "Bearer feed-token", http.StatusUnauthorized},
		{"GET", "/metrics", "Bearer outsider-token", http.StatusForbidden},
		{"GET", "/metrics", "Bearer scraper-token", http.StatusOK},
		{"GET", "/metrics", "bearer  scraper-token ", http.StatusOK},
		// The permission is get on /metrics, nothing else.
		{"POST", "/metrics", "Bearer scraper-token", http.StatusForbidden},
		{"GET", "/debug/pprof/", "Bearer scraper-token", http.StatusForbidden},
	} {
		w := serve(tc.method, tc.path, tc.authorization)
		if w.Code != tc.code || (tc.code == http.StatusOK) != (w.Body.String() == "metrics") {
			t.Errorf("%s %s %q: %d %q, want %d", tc.method, tc.path, tc.authorization, w.Code, w.Body.String(), tc.code)
		}
	}
	s.fail = true
	if w := serve("GET", "/metrics", "Bearer outsider2-token"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("API server down: %d %q", w.Code, w.Body.String())
	}
}
