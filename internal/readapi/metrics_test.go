package readapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// scrapeAccess answers as an API server would: tokens carry one
// audience; "scraper" may get /metrics, "reader" may not.
func scrapeAccess(t *testing.T) (*Access, *int) {
	t.Helper()
	reviewed := new(int)
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		*reviewed++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		user, audience, _ := strings.Cut(tr.Spec.Token, "@")
		if (user == "scraper" || user == "reader") && slices.Contains(tr.Spec.Audiences, audience) {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: user},
				Audiences: []string{audience}}
		} else {
			tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		nr := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.ResourceAttributes == nil && nr != nil && nr.Path == "/metrics" && nr.Verb == "get" &&
			sar.Spec.User == "scraper"
		return true, sar, nil
	})
	// A clock that does not move: the review limit admits its burst only.
	clk := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	return NewAccess(c.AuthenticationV1().TokenReviews(), c.AuthorizationV1().SubjectAccessReviews(), clk), reviewed
}

// The pump pod's /metrics takes only tokens made for the feed's audience
// whose user may get /metrics: the scraper's token for
// the API server, or for another feed, is 401 like the read API's, a
// feed token of a user without the ClusterRole is 403, and a flood of
// unknown tokens is refused with 429 past the review limit, never passed
// on to the API server.
func TestMetricsTakeOnlyFeedAudienceTokens(t *testing.T) {
	feed := types.NamespacedName{Namespace: "airport", Name: "pek"}
	access, reviewed := scrapeAccess(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "flightfeed_test_total", Help: "a series"}))
	s := &MetricsServer{Feed: feed, Gatherer: reg, Access: access, Log: logr.Discard()}
	h := s.handler()
	get := func(token string) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		name, token string
		code        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"the scraper's token for the API server", "scraper@https://kubernetes.default.svc", http.StatusUnauthorized},
		{"the scraper's token for another feed", "scraper@flightfeed.aero/airport/pvg", http.StatusUnauthorized},
		{"a reader's token for the feed", "reader@flightfeed.aero/airport/pek", http.StatusForbidden},
		{"the scraper's token for the feed", "scraper@flightfeed.aero/airport/pek", http.StatusOK},
	} {
		w := get(tc.token)
		if w.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, w.Code, w.Body, tc.code)
		}
		if tc.code == http.StatusOK && !strings.Contains(w.Body.String(), "flightfeed_test_total") {
			t.Errorf("%s: the scrape holds no series: %s", tc.name, w.Body)
		}
	}

	before := *reviewed
	codes := map[int]int{}
	for i := range 3 * ReviewBurst {
		codes[get(fmt.Sprintf("forged-%d", i)).Code]++
	}
	if codes[http.StatusTooManyRequests] == 0 || *reviewed-before > ReviewBurst {
		t.Fatalf("a flood of forged tokens: answers %v, %d reviewed (the burst is %d)", codes, *reviewed-before, ReviewBurst)
	}
	// A token already decided is served from the cache during the flood.
	if w := get("scraper@flightfeed.aero/airport/pek"); w.Code != http.StatusOK {
		t.Fatalf("the scraper during the flood: %d %s", w.Code, w.Body)
	}
}
