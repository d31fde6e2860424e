package operator_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/operator"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
)

// The operator's /metrics, against a real API server: HTTPS, and only for
// a bearer token the API server issued for itself (TokenReview) whose user
// may get the non-resource URL /metrics (SubjectAccessReview), as the
// chart's metrics-reader ClusterRole grants it: no token or a forged one
// is 401, a ServiceAccount without that binding 403, the scraper 200.
func TestOperatorMetricsRequireAnAllowedToken(t *testing.T) {
	addr := loopback.FreeAddr(t)
	e := newEnv(t, func(o *operator.Options) { o.MetricsAddr = addr })
	kube := kubernetes.NewForConfigOrDie(restCfg)
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	e.create(reader)
	for _, sa := range []string{"scraper", "outsider"} {
		e.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: e.ns}})
	}
	e.create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-scraper"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: "scraper"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name}})
	token := func(sa string, audiences ...string) string {
		t.Helper()
		tr, err := kube.CoreV1().ServiceAccounts(e.ns).CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	scraper, outsider := token("scraper"), token("outsider")
	// A token made for a feed's read API only is no token for the API
	// server, hence none for the operator's /metrics.
	scraperForFeed := token("scraper", feednames.Audience(types.NamespacedName{Namespace: e.ns, Name: "pek"}))
	url := "https://" + addr + "/metrics"
	await.Eventually(t, "the operator's metrics to answer the scraper", waitLong, func() (bool, string) {
		code, body := getMetrics(t, url, scraper)
		return code == http.StatusOK, fmt.Sprint(code, " ", body[:min(len(body), 200)])
	})
	for _, tc := range []struct {
		name, token string
		code        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the API server did not issue", "not-a-token", http.StatusUnauthorized},
		{"the scraper's token for a feed only", scraperForFeed, http.StatusUnauthorized},
		{"a ServiceAccount without the binding", outsider, http.StatusForbidden},
		{"the scraper", scraper, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := getMetrics(t, url, tc.token)
			if code != tc.code {
				t.Fatalf("%d %s, want %d", code, body, tc.code)
			}
			if code == http.StatusOK && !strings.Contains(body, "controller_runtime_reconcile_total") {
				t.Fatalf("200 without the controller's metrics:\n%s", body[:min(len(body), 500)])
			}
		})
	}
	if code, body := getMetrics(t, "http://"+addr+"/metrics", scraper); code == http.StatusOK {
		t.Errorf("plain HTTP: %d %s", code, body)
	}
}

// getMetrics GETs u with the bearer token (none when empty), trusting any
// certificate: the operator serves a self-signed one here.
func getMetrics(t *testing.T, u, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
