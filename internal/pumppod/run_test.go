package pumppod_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/readapi"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// idleRunner is a pump that reports itself running and does nothing: the
// read API needs no pump, only the feed's database.
type idleRunner struct{ running atomic.Bool }

func (r *idleRunner) Run(ctx context.Context) error {
	r.running.Store(true)
	<-ctx.Done()
	r.running.Store(false)
	return nil
}

func (r *idleRunner) Status() feedrun.Status {
	return feedrun.Status{Status: pump.Status{Running: r.running.Load(), MailboxReachable: true, DatabaseReachable: true}, KafkaReachable: true}
}

func idleFactory(context.Context, pumppod.RunParams) (pumppod.FeedRunner, error) {
	return &idleRunner{}, nil
}

// seed writes two days of flights the way the pump does.
func seed(t *testing.T, dsn string) []flight.State {
	t.Helper()
	ctx := t.Context()
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	epoch, err := db.TakeEpoch(ctx, "seed")
	if err != nil {
		t.Fatal(err)
	}
	for i, snap := range []store.Snapshot{
		{FullDay: true, Day: day9, Records: []store.SnapshotRecord{storetest.Record(3, "CA3", day9), storetest.Record(1, "CA1", day9), storetest.Record(2, "CA2", day9)}},
		{FullDay: true, Day: day10, Records: []store.SnapshotRecord{storetest.Record(4, "CA4", day10)}},
	} {
		tx, err := db.Begin(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: int64(i + 1), Type: "SCHD", Styp: "RESP"}, snap); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	states, err := db.ReadFlights(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return states
}

// tlsClient talks to the manager's self-signed endpoints without verifying
// their certificate (curl -k): the bearer token is what is tested here.
var tlsClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
}}

// getAs GETs u with the bearer token (none when empty).
func getAs(t *testing.T, token, u string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := tlsClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

type page struct {
	Items  []json.RawMessage `json:"items"`
	Cursor string            `json:"cursor"`
}

// served is a manager — the one `flightfeed manager` runs — leading the
// feed pek whose database seed filled, with its read API, probe and
// metrics addresses.
type served struct {
	ns, api, probe, metrics string
	// reader's token may read the feed's flights (a RoleBinding in ns);
	// scraper's may get /metrics (a ClusterRoleBinding).
	reader, scraper string
	// states are the seeded flights in FLID order.
	states []flight.State
}

// serve seeds a feed's database and starts a manager that leads it (with
// an idle runner: the read API needs only the database).
func serve(t *testing.T) served {
	t.Helper()
	dsn := pgtest.New(t)
	return serveDB(t, dsn, seed(t, dsn), "")
}

// serveDB starts the manager for a feed of the seeded database dsn, whose
// read API connects with readDSN when it is not empty
// (spec.database.readDsnSecretRef).
func serveDB(t *testing.T, dsn string, states []flight.State, readDSN string) served {
	t.Helper()
	ctx := t.Context()
	srv := served{ns: "t-read-" + utilrand.String(6), states: states}
	c := kubetest.Client(t, restCfg)
	database := v1alpha1.DatabaseSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "db", Key: "dsn"}}
	if readDSN != "" {
		database.ReadDSNSecretRef = &v1alpha1.SecretKeyRef{Name: "db", Key: "read-dsn"}
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: srv.ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: "pek"}, Name: "db", Namespace: srv.ns}, StringData: map[string]string{"dsn": dsn, "read-dsn": readDSN}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: "pek"}, Name: "mbx", Namespace: srv.ns}, StringData: map[string]string{"dsn": "root@tcp(127.0.0.1:3306)/unused"}},
		&v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Name: "pek", Namespace: srv.ns}, Spec: v1alpha1.FlightFeedSpec{
			Airport:  v1alpha1.AirportSpec{IATA: "PEK"},
			Mailbox:  v1alpha1.MailboxSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "mbx", Key: "dsn"}},
			Database: database,
			Kafka:    v1alpha1.KafkaSpec{Brokers: []string{"127.0.0.1:9092"}},
		}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	srv.api, srv.probe, srv.metrics = loopback.FreeAddr(t), loopback.FreeAddr(t), loopback.FreeAddr(t)
	mgr, err := pumppod.New(pumppod.Options{
		RestConfig: restCfg, APIAddr: srv.api, ProbeAddr: srv.probe, MetricsAddr: srv.metrics,
		Identity: "replica-a", LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
		StatusInterval: 300 * time.Millisecond, Factory: idleFactory, Namespaces: []string{srv.ns},
		// The pump pod of ns/pek, as the operator runs it: its /metrics
		// takes tokens for pek's audience.
		Feed: types.NamespacedName{Namespace: srv.ns, Name: "pek"},
	})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	srv.reader = saToken(t, srv.ns, "reader", readerRole(srv.ns), feedAudience(srv.ns))
	// The scraper's token is made for the feed's audience: the pump pod's
	// /metrics takes no other.
	srv.scraper = saToken(t, srv.ns, "scraper", metricsReaderRole(srv.ns), feedAudience(srv.ns))
	await.Eventually(t, "the metrics endpoint to answer", waitLong, func() (bool, string) {
		code, body := getAs(t, srv.scraper, "https://"+srv.metrics+"/metrics")
		return code == http.StatusOK, fmt.Sprint(code, " ", string(body[:min(len(body), 200)]))
	})
	await.Eventually(t, "the read API to serve the feed", waitLong, func() (bool, string) {
		code, body := getAs(t, srv.reader, srv.flights())
		return code == http.StatusOK, fmt.Sprint(code, " ", string(body))
	})
	return srv
}

// get reads u as the feed's reader.
func (s served) get(t *testing.T, u string) (int, []byte) {
	t.Helper()
	return getAs(t, s.reader, u)
}

// readerRole grants what docs/security.md tells users to grant for the read API:
// get on flightfeeds/flights in the namespace.
func readerRole(ns string) client.Object {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "flight-reader", Namespace: ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds/flights"}, Verbs: []string{"get"}}}}
}

// metricsReaderRole is the chart's metrics-reader ClusterRole
// (charts/flightfeed/templates/metrics-reader-rbac.yaml), one per test.
func metricsReaderRole(ns string) client.Object {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"}, Rules: []rbacv1.PolicyRule{{
		NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
}

// feedAudience is the audience of tokens for the read API of ns/pek.
func feedAudience(ns string) string {
	return feednames.Audience(types.NamespacedName{Namespace: ns, Name: "pek"})
}

// saToken creates the ServiceAccount ns/name, binds it to role (a Role in
// ns or a ClusterRole; nil: no binding) and returns a token the API server
// issued for it (TokenRequest, as `kubectl create token [--audience A]`
// does) for audiences (none: the API server's own).
func saToken(t *testing.T, ns, name string, role client.Object, audiences ...string) string {
	t.Helper()
	ctx := t.Context()
	c := kubetest.Client(t, restCfg)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}
	switch r := role.(type) {
	case nil:
	case *rbacv1.Role:
		if err := c.Create(ctx, r); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if err := c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name}}); err != nil {
			t.Fatal(err)
		}
	case *rbacv1.ClusterRole:
		if err := c.Create(ctx, r); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if err := c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.Name}}); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("saToken: %T is not a role", role)
	}
	return token(t, ns, name, audiences...)
}

// token is a new token of the ServiceAccount ns/name for audiences.
func token(t *testing.T, ns, name string, audiences ...string) string {
	t.Helper()
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), Audiences: audiences}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// flights is the read API's URL of the feed's flights.
func (s served) flights() string {
	return "https://" + s.api + "/api/v1/feeds/" + s.ns + "/pek/flights"
}

// list reads a page of flights with the query.
func (s served) list(t *testing.T, query url.Values) page {
	t.Helper()
	code, body := s.get(t, s.flights()+"?"+query.Encode())
	if code != http.StatusOK {
		t.Fatalf("%s: %d %s", query.Encode(), code, body)
	}
	var p page
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// flids lists a page's FLIDs, comma-separated.
func flids(t *testing.T, p page) string {
	t.Helper()
	var out []string
	for _, it := range p.Items {
		var doc struct{ FLID string }
		if err := json.Unmarshal(it, &doc); err != nil {
			t.Fatal(err)
		}
		out = append(out, doc.FLID)
	}
	return strings.Join(out, ",")
}

// The manager `flightfeed manager` runs serves a feed's flights through
// its read API — one consistent read, canonical JSON, filters and paging,
// a JSON error for every bad request — its metrics and its probes; one
// subtest per concern, on one manager.
func TestManagerServesReadsMetricsAndProbes(t *testing.T) {
	srv := serve(t)
	base := srv.flights()

	t.Run("every flight in one read, as its canonical document", func(t *testing.T) {
		all := srv.list(t, nil)
		if len(all.Items) != 4 || all.Cursor != "" {
			t.Fatalf("list: %d items, cursor %q", len(all.Items), all.Cursor)
		}
		for i, s := range srv.states {
			want, err := flight.CanonicalJSON(s)
			if err != nil {
				t.Fatal(err)
			}
			if string(all.Items[i]) != string(want) {
				t.Fatalf("item %d:\n%s\nwant the canonical document\n%s", i, all.Items[i], want)
			}
		}
	})

	t.Run("filters and paging", func(t *testing.T) {
		if got := flids(t, srv.list(t, url.Values{"day": {day9}})); got != "1,2,3" {
			t.Fatalf("day %s: %s", day9, got)
		}
		p1 := srv.list(t, url.Values{"limit": {"3"}})
		if flids(t, p1) != "1,2,3" || p1.Cursor == "" {
			t.Fatalf("page 1: %s cursor %q", flids(t, p1), p1.Cursor)
		}
		p2 := srv.list(t, url.Values{"limit": {"3"}, "cursor": {p1.Cursor}})
		if flids(t, p2) != "4" || p2.Cursor != "" {
			t.Fatalf("page 2: %s cursor %q", flids(t, p2), p2.Cursor)
		}
		if got := flids(t, srv.list(t, url.Values{"updatedSince": {time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}})); got != "" {
			t.Fatalf("updatedSince in the future: %s", got)
		}
		if got := flids(t, srv.list(t, url.Values{"updatedSince": {srv.states[0].UpdatedAt.Add(-time.Second).UTC().Format(time.RFC3339Nano)}})); got != "1,2,3,4" {
			t.Fatalf("updatedSince before every update: %s", got)
		}
	})

	t.Run("one flight", func(t *testing.T) {
		code, body := srv.get(t, base+"/4")
		want, _ := flight.CanonicalJSON(srv.states[3])
		if code != http.StatusOK || string(body) != string(want) {
			t.Fatalf("flight 4: %d %s", code, body)
		}
	})

	t.Run("a JSON error for every bad request", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			code int
		}{
			{base + "/99", http.StatusNotFound},
			{base + "/abc", http.StatusBadRequest},
			{base + "?day=9-9-2026", http.StatusBadRequest},
			{base + "?limit=0", http.StatusBadRequest},
			{base + "?cursor=zzz", http.StatusBadRequest},
			{base + "?updatedSince=yesterday", http.StatusBadRequest},
			{"https://" + srv.api + "/api/v1/feeds/" + srv.ns + "/nope/flights", http.StatusNotFound},
		} {
			tok := srv.reader
			if strings.Contains(tc.path, "/nope/") {
				// A token made for the feed asked for: one for pek is
				// refused before the lookup (401).
				tok = token(t, srv.ns, "reader", feednames.Audience(types.NamespacedName{Namespace: srv.ns, Name: "nope"}))
			}
			if code, body := getAs(t, tok, tc.path); code != tc.code || !json.Valid(body) {
				t.Errorf("%s: %d %s, want %d with a JSON error", tc.path, code, body, tc.code)
			}
		}
	})

	t.Run("the leader's metrics", func(t *testing.T) {
		await.Eventually(t, "the leader's metrics on /metrics", waitLong, func() (bool, string) {
			code, body := getAs(t, srv.scraper, "https://"+srv.metrics+"/metrics")
			return code == http.StatusOK && strings.Contains(string(body), `flightfeed_leader{feed="pek",feed_namespace="`+srv.ns+`"} 1`), fmt.Sprint(code)
		})
	})

	t.Run("the status says the read API's sessions are read-only", func(t *testing.T) {
		c := kubetest.Client(t, restCfg)
		await.Eventually(t, "status.readApi.databaseAccess ReadOnlySessions", waitLong, func() (bool, string) {
			var ff v1alpha1.FlightFeed
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: srv.ns, Name: "pek"}, &ff); err != nil {
				return false, err.Error()
			}
			return ff.Status.ReadAPI != nil && ff.Status.ReadAPI.DatabaseAccess == v1alpha1.ReadAPIReadOnlySessions, fmt.Sprintf("%+v", ff.Status.ReadAPI)
		})
	})

	t.Run("the probes", func(t *testing.T) {
		await.Eventually(t, "the probes", waitLong, func() (bool, string) {
			h, _ := getHTTP(t, "http://"+srv.probe+"/healthz")
			r, body := getHTTP(t, "http://"+srv.probe+"/readyz")
			return h == http.StatusOK && r == http.StatusOK, fmt.Sprint(h, r, string(body))
		})
	})
}

// The read API and /metrics answer only bearer tokens the API server
// accepts (TokenReview) for users it allows (SubjectAccessReview): no
// token or a bad one is 401, a ServiceAccount without the right binding
// 403, with it 200; the read API's refusals are JSON. Both are HTTPS.
func TestReadAPIAndMetricsRequireAnAllowedToken(t *testing.T) {
	srv := serve(t)
	outsiderForAPIServer := saToken(t, srv.ns, "outsider", nil)
	outsiderForFeed := token(t, srv.ns, "outsider", feedAudience(srv.ns))
	// Allowed to read flights elsewhere, not in srv.ns.
	otherNS := srv.ns + "-other"
	if err := kubetest.Client(t, restCfg).Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNS}}); err != nil {
		t.Fatal(err)
	}
	elsewhere := saToken(t, otherNS, "reader", readerRole(otherNS), feedAudience(srv.ns))
	// The reader's tokens for the API server (what its pod's own token
	// is) and for another feed: a receiver of either must not be able to
	// use it here.
	readerForAPIServer := token(t, srv.ns, "reader")
	readerForOtherFeed := token(t, srv.ns, "reader", feednames.Audience(types.NamespacedName{Namespace: srv.ns, Name: "pvg"}))
	// Bound to the metrics reader, not to the flights.
	scraperForFeed := srv.scraper
	scraperForAPIServer := token(t, srv.ns, "scraper")
	scraperForOtherFeed := token(t, srv.ns, "scraper", feednames.Audience(types.NamespacedName{Namespace: srv.ns, Name: "pvg"}))
	feed, metrics := srv.flights(), "https://"+srv.metrics+"/metrics"

	for _, tc := range []struct {
		name, token, url string
		code             int
	}{
		{"read API, no token", "", feed, http.StatusUnauthorized},
		{"read API, unknown path, no token", "", "https://" + srv.api + "/", http.StatusUnauthorized},
		{"read API, a token the API server did not issue", "not-a-token", feed, http.StatusUnauthorized},
		{"read API, a ServiceAccount without a RoleBinding", outsiderForFeed, feed, http.StatusForbidden},
		{"read API, the reader's token for the API server", readerForAPIServer, feed, http.StatusUnauthorized},
		{"read API, the reader's token for another feed", readerForOtherFeed, feed, http.StatusUnauthorized},
		{"read API, a reader of another namespace", elsewhere, feed, http.StatusForbidden},
		{"read API, the metrics scraper", scraperForFeed, feed, http.StatusForbidden},
		{"read API, the reader", srv.reader, feed, http.StatusOK},
		{"metrics, no token", "", metrics, http.StatusUnauthorized},
		{"metrics, a ServiceAccount without a binding", outsiderForFeed, metrics, http.StatusForbidden},
		{"metrics, a ServiceAccount without a binding, its token for the API server", outsiderForAPIServer, metrics, http.StatusUnauthorized},
		{"metrics, the flights reader", srv.reader, metrics, http.StatusForbidden},
		{"metrics, the scraper's token for the API server", scraperForAPIServer, metrics, http.StatusUnauthorized},
		{"metrics, the scraper's token for another feed", scraperForOtherFeed, metrics, http.StatusUnauthorized},
		{"metrics, the scraper", scraperForFeed, metrics, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := getAs(t, tc.token, tc.url)
			if code != tc.code {
				t.Fatalf("%d %s, want %d", code, body, tc.code)
			}
			if strings.HasPrefix(tc.url, feed) && !json.Valid(body) {
				t.Fatalf("%d with a body that is not JSON: %s", code, body)
			}
		})
	}

	t.Run("plain HTTP is not served", func(t *testing.T) {
		for _, u := range []string{"http://" + srv.api + "/api/v1/feeds/" + srv.ns + "/pek/flights", "http://" + srv.metrics + "/metrics"} {
			if code, body := getHTTP(t, u); code == http.StatusOK {
				t.Errorf("%s: %d %s over plain HTTP", u, code, body)
			}
		}
	})

	t.Run("HTTP/2 is not offered", func(t *testing.T) {
		for _, addr := range []string{srv.api, srv.metrics} {
			conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			proto := conn.ConnectionState().NegotiatedProtocol
			_ = conn.Close()
			if proto == "h2" {
				t.Errorf("%s negotiated HTTP/2", addr)
			}
		}
	})
}

// getHTTP GETs a plain HTTP URL (the probes).
func getHTTP(t *testing.T, u string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func TestNewChecksOptions(t *testing.T) {
	if _, err := pumppod.New(pumppod.Options{RestConfig: restCfg}); err == nil {
		t.Fatal("a manager without a RunnerFactory was built")
	}
	_, err := pumppod.New(pumppod.Options{RestConfig: restCfg, Factory: idleFactory, Identity: "x",
		LeaseDuration: 5 * time.Second, RenewDeadline: 10 * time.Second, MetricsAddr: "0", ProbeAddr: "0", APIAddr: "0"})
	if err == nil || !strings.Contains(err.Error(), "renew deadline") {
		t.Fatalf("lease shorter than the renew deadline: %v", err)
	}
	_, err = pumppod.New(pumppod.Options{RestConfig: restCfg, Factory: idleFactory, Identity: "x", SecretResync: -time.Second,
		MetricsAddr: "0", ProbeAddr: "0", APIAddr: "0"})
	if err == nil || !strings.Contains(err.Error(), "Secret resync period must be positive") {
		t.Fatalf("a negative Secret resync period: %v", err)
	}
	t.Setenv("POD_NAME", "flightfeed-7d9f-abcde")
	if id, err := pumppod.DefaultIdentity(); err != nil || id != "flightfeed-7d9f-abcde" {
		t.Fatalf("identity %q %v", id, err)
	}
}

// A flood of unknown tokens (each would cost the API server a TokenReview,
// on the API server that also serves the feed's Lease renewals) is refused
// with 429 past ReviewRate reviews a second, and the Lease is renewed
// throughout on its own client: the flood cannot take the feed's leader
// away. Today's code without the limit answered every forged token with a
// review and a 401.
func TestATokenFloodGets429sWhileTheLeaseIsRenewed(t *testing.T) {
	srv := serve(t)
	c := kubetest.Client(t, restCfg)
	key := types.NamespacedName{Namespace: srv.ns, Name: feednames.Lease(types.NamespacedName{Namespace: srv.ns, Name: "pek"})}
	var lease coordinationv1.Lease
	await.Eventually(t, "replica-a to hold pek's Lease", waitLong, func() (bool, string) {
		if err := c.Get(t.Context(), key, &lease); err != nil {
			return false, err.Error()
		}
		return ptr.Deref(lease.Spec.HolderIdentity, "") == "replica-a", fmt.Sprint(lease.Spec.HolderIdentity)
	})
	leaseDuration := time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second

	ctx, stop := context.WithTimeout(t.Context(), 3*leaseDuration+2*time.Second)
	defer stop()
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.flights(), nil)
				if err != nil {
					return
				}
				req.Header.Set("Authorization", fmt.Sprintf("Bearer forged-%d-%d", w, i))
				code := 0
				if resp, err := tlsClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	// The Lease, sampled while the flood runs: never another holder, never
	// a renewal older than the lease duration.
	var samples, stale int
	var holders []string
	for ctx.Err() == nil {
		var l coordinationv1.Lease
		if err := c.Get(context.Background(), key, &l); err == nil {
			samples++
			if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "replica-a" {
				holders = append(holders, h)
			}
			if l.Spec.RenewTime == nil || time.Since(l.Spec.RenewTime.Time) > leaseDuration {
				stale++
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("flood: answers %v; lease samples %d", codes, samples)
	if codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("no 429 in a flood of forged tokens: %v", codes)
	}
	if samples == 0 || stale > 0 || len(holders) > 0 {
		t.Errorf("the Lease during the flood: %d samples, %d older than %s, other holders %v", samples, stale, leaseDuration, holders)
	}
	// The reviewed ones stay within the limit: the burst, then ReviewRate
	// a second (and a second of slack for the sampling).
	if reviewed, bound := codes[http.StatusUnauthorized], readapi.ReviewBurst+readapi.ReviewRate*int((3*leaseDuration+3*time.Second)/time.Second); reviewed > bound {
		t.Errorf("%d forged tokens reviewed, more than %d", reviewed, bound)
	}
	// The reader is served again once the flood is over.
	await.Eventually(t, "the reader served after the flood", waitLong, func() (bool, string) {
		code, body := srv.get(t, srv.flights())
		return code == http.StatusOK, fmt.Sprint(code, " ", string(body))
	})
}
