package scrapertoken_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flightfeed/flightfeed/internal/scrapertoken"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

func TestDue(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ttl := 24 * time.Hour
	for _, tc := range []struct {
		name    string
		expires time.Time
		due     bool
	}{
		{"no token", time.Time{}, true},
		{"fresh", now.Add(ttl), false},
		{"more than a third left", now.Add(8*time.Hour + time.Second), false},
		{"a third left", now.Add(8 * time.Hour), true},
		{"less than a third left", now.Add(time.Hour), true},
		{"expired", now.Add(-time.Minute), true},
	} {
		if got := scrapertoken.Due(now, tc.expires, ttl); got != tc.due {
			t.Errorf("%s: Due = %v, want %v", tc.name, got, tc.due)
		}
	}
}

// The keeper fills the Secret with a token of the scraper's ServiceAccount
// that the API server accepts and that expires after the TTL; it leaves a
// fresh token alone, replaces it once a third of its life is left, and the
// replaced one is a different token. Run against a real kube-apiserver.
func TestKeeperRenewsBeforeExpiry(t *testing.T) {
	cfg, _ := kubetest.Start(t)
	kube := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	const ns, sa, secret = "default", "metrics-scraper", "metrics-scraper-token"
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clock := clocktesting.NewFakeClock(time.Now())
	const ttl = time.Hour
	k := &scrapertoken.Keeper{Client: kube, Namespace: ns, ServiceAccount: sa, Secret: secret, TTL: ttl, Clock: clock}

	// No Secret: an error naming it, nothing created.
	if _, err := k.Renew(ctx); err == nil || !strings.Contains(err.Error(), "scraper token Secret default/metrics-scraper-token does not exist") {
		t.Fatalf("Renew without the Secret: %v", err)
	}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	next, err := k.Renew(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, expires := read(t, kube, ns, secret)
	if got := expires.Sub(clock.Now()); got < ttl-time.Minute || got > ttl+time.Minute {
		t.Errorf("the token expires in %s, want about %s", got, ttl)
	}
	if want := expires.Add(-ttl / 3); !next.Equal(want) {
		t.Errorf("next renewal at %s, want %s (a third of the lifetime before expiry)", next, want)
	}
	review(t, kube, first, "system:serviceaccount:default:metrics-scraper")

	// Fresh: left alone.
	clock.SetTime(next.Add(-time.Second))
	if _, err := k.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if again, _ := read(t, kube, ns, secret); again != first {
		t.Fatal("a fresh token was replaced")
	}

	// Due: replaced by another valid token. The loop does it on its own
	// once its timer fires.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- k.Start(runCtx) }()
	await.Eventually(t, "the keeper waiting for the renewal time", 30*time.Second, func() (bool, string) { return clock.HasWaiters(), "" })
	clock.SetTime(next)
	var second string
	await.Eventually(t, "the token replaced at its renewal time", 30*time.Second, func() (bool, string) {
		second, _ = read(t, kube, ns, secret)
		return second != first, ""
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	review(t, kube, second, "system:serviceaccount:default:metrics-scraper")
}

func TestKeeperValidate(t *testing.T) {
	for _, tc := range []struct {
		k    scrapertoken.Keeper
		want string
	}{
		{scrapertoken.Keeper{Namespace: "ns", ServiceAccount: "sa"}, "all required"},
		{scrapertoken.Keeper{Namespace: "ns", ServiceAccount: "sa", Secret: "s", TTL: time.Minute}, "shorter than the 10m0s"},
		{scrapertoken.Keeper{Namespace: "ns", ServiceAccount: "sa", Secret: "s"}, ""},
	} {
		err := tc.k.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: Validate() = %v, want %q", tc.k, err, tc.want)
		}
	}
}

func read(t *testing.T, kube kubernetes.Interface, ns, name string) (string, time.Time) {
	t.Helper()
	s, err := kube.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expires, err := time.Parse(time.RFC3339, s.Annotations[scrapertoken.ExpiresAnnotation])
	if err != nil {
		t.Fatalf("the Secret's %s: %v", scrapertoken.ExpiresAnnotation, err)
	}
	return string(s.Data[scrapertoken.Key]), expires
}

// review asks the API server who token is.
func review(t *testing.T, kube kubernetes.Interface, token, user string) {
	t.Helper()
	tr, err := kube.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Status.Authenticated || tr.Status.User.Username != user {
		t.Fatalf("the token is not %s's: %+v", user, tr.Status)
	}
}
