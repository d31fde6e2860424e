package scrapertoken_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flightfeed/flightfeed/internal/scrapertoken"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

const apiServerAudience = "https://kubernetes.default.svc.cluster.local"

// jwt is an unsigned token with the given audiences, as the fake API
// server below issues them.
func jwt(t *testing.T, aud []string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"aud": aud, "sub": "system:serviceaccount:monitoring:scraper"})
	if err != nil {
		t.Fatal(err)
	}
	return "e30." + base64.RawURLEncoding.EncodeToString(b) + ".sig"
}

// The scraper's token carries the API server's audience and every feed's
// (the pump pods' /metrics take only a token for their feed),
// and is made again when a feed comes, not before.
func TestKeeperTokenCarriesTheFeedsAudiences(t *testing.T) {
	c := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scraper-token", Namespace: "monitoring"}})
	var requested [][]string
	c.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		aud := tr.Spec.Audiences
		requested = append(requested, aud)
		if len(aud) == 0 {
			aud = []string{apiServerAudience}
		}
		tr.Status = authenticationv1.TokenRequestStatus{Token: jwt(t, aud),
			ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
		return true, tr, nil
	})
	feeds := []string{"flightfeed.aero/airport/pvg", "flightfeed.aero/airport/pek"}
	k := &scrapertoken.Keeper{Client: c, Namespace: "monitoring", ServiceAccount: "scraper", Secret: "scraper-token",
		Clock:     clocktesting.NewFakeClock(time.Now()),
		Audiences: func(context.Context) ([]string, error) { return slices.Clone(feeds), nil }}
	tokenAudiences := func() []string {
		s, err := c.CoreV1().Secrets("monitoring").Get(t.Context(), "scraper-token", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		aud, err := scrapertoken.TokenAudiences(string(s.Data[scrapertoken.Key]))
		if err != nil {
			t.Fatal(err)
		}
		return aud
	}
	if _, err := k.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{apiServerAudience, "flightfeed.aero/airport/pek", "flightfeed.aero/airport/pvg"}
	if got := tokenAudiences(); !slices.Equal(got, want) {
		t.Fatalf("token audiences %v, want %v", got, want)
	}
	n := len(requested)
	if _, err := k.Renew(t.Context()); err != nil || len(requested) != n {
		t.Fatalf("the same feeds made another token (%d requests, was %d): %v", len(requested), n, err)
	}
	feeds = append(feeds, "flightfeed.aero/ground/can")
	if _, err := k.Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := tokenAudiences(); !slices.Contains(got, "flightfeed.aero/ground/can") || !slices.Contains(got, apiServerAudience) {
		t.Fatalf("after a new feed the token carries %v", got)
	}
}

// Against a real kube-apiserver: the keeper's token with feed audiences
// passes a TokenReview for a feed's audience (a pump pod's /metrics) and
// one without audiences (the operator's /metrics, controller-runtime's
// filter), and not one for a feed it was not made for.
func TestKeeperFeedTokenPassesBothReviews(t *testing.T) {
	cfg, _ := kubetest.Start(t)
	kube := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	const ns, sa, secret = "default", "feed-scraper", "feed-scraper-token"
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := &scrapertoken.Keeper{Client: kube, Namespace: ns, ServiceAccount: sa, Secret: secret, Clock: clocktesting.NewFakeClock(time.Now()),
		Audiences: func(context.Context) ([]string, error) { return []string{"flightfeed.aero/airport/pek"}, nil }}
	if _, err := k.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := kube.CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := string(s.Data[scrapertoken.Key])
	for _, tc := range []struct {
		audiences []string
		ok        bool
	}{{nil, true}, {[]string{"flightfeed.aero/airport/pek"}, true}, {[]string{"flightfeed.aero/airport/pvg"}, false}} {
		tr, err := kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: tc.audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Status.Authenticated != tc.ok {
			t.Errorf("review for %v: authenticated %v, want %v (%s)", tc.audiences, tr.Status.Authenticated, tc.ok, tr.Status.Error)
		}
	}
}
