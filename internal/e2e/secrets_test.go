package e2e_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// secretMarker is in every credential of the feed below; nothing the
// operator shows may contain it. (internal/cli/secrets_test.go checks the
// CLI's one-line errors and logs the same way.)
const secretMarker = "Qx7Secret"

// No credential of a feed shows anywhere a user or an attacker reading
// the operator's outputs would look: a feed whose mailbox, database,
// read-only database and SASL passwords all carry a marker is driven
// through a wrong mailbox password, an unreachable broker (with SASL),
// an unreachable read-only database and a DEAD message; the manager's
// every log line (--zap-log-level=10, and whatever else the process
// writes), the Events, the FlightFeed and its FlightFeedDays, /metrics and
// the read API's error bodies are searched for the marker.
func TestNoSecretAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	e := newEnv(t)
	w := newWorld(t, "pek")
	ctx := t.Context()

	// A mailbox user whose password holds the marker.
	mcfg, err := mysql.ParseDSN(mailboxtest.WithUser(t, w.MailboxDSN, "ffsec_", secretMarker+"-mbx"))
	if err != nil {
		t.Fatal(err)
	}
	mailboxDSN := func(password string) string {
		c := mcfg.Clone()
		c.Passwd = password
		return c.FormatDSN()
	}
	// PostgreSQL here trusts local connections: the password is sent and
	// ignored, the pump runs. The read-only DSN points at a closed port.
	pgDSN := strings.Replace(w.DatabaseDSN, "postgres://postgres@", "postgres://postgres:"+secretMarker+"-pg@", 1)
	if pgDSN == w.DatabaseDSN {
		t.Fatalf("cannot put a password into %s", w.DatabaseDSN)
	}
	readDSN := "postgres://reader:" + secretMarker + "-ro@" + loopback.FreeAddr(t) + "/ff?sslmode=disable&connect_timeout=2"

	// The Secrets name the feed; the SASL Secret allows the (unreachable)
	// broker, so the pump gets its credentials and tries to send them.
	pekOnly := map[string]string{v1alpha1.FeedsAnnotation: "pek"}
	broker := loopback.FreeAddr(t)
	e.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: pekOnly, Name: "pek-mailbox", Namespace: e.ns},
		StringData: map[string]string{"dsn": mailboxDSN(secretMarker + "-wrong")}})
	e.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: pekOnly, Name: "pek-db", Namespace: e.ns},
		StringData: map[string]string{"dsn": pgDSN, "read": readDSN}})
	e.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"},
		Annotations: map[string]string{v1alpha1.FeedsAnnotation: "pek", v1alpha1.BrokersAnnotation: broker}, Name: "pek-sasl", Namespace: e.ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{"username": "flightfeed", "password": secretMarker + "-sasl"}})
	e.create(&v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Name: "pek", Namespace: e.ns}, Spec: v1alpha1.FlightFeedSpec{
		Airport: v1alpha1.AirportSpec{IATA: "PEK", TimeZone: "Asia/Shanghai"},
		Mailbox: v1alpha1.MailboxSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "pek-mailbox", Key: "dsn"}},
		Database: v1alpha1.DatabaseSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "pek-db", Key: "dsn"},
			ReadDSNSecretRef: &v1alpha1.SecretKeyRef{Name: "pek-db", Key: "read"}},
		Kafka: v1alpha1.KafkaSpec{Brokers: []string{broker}, TLS: &v1alpha1.KafkaTLS{},
			SASL: &v1alpha1.KafkaSASL{Mechanism: "SCRAM-SHA-512", SecretRef: v1alpha1.SecretRef{Name: "pek-sasl"}}},
		Requests: v1alpha1.RequestsSpec{Disabled: true},
	}})
	key := types.NamespacedName{Namespace: e.ns, Name: "pek"}

	api := loopback.FreeAddr(t)
	m := e.startPump("replica-a", "pek", leaseTimings{duration: 4 * time.Second, renew: 3 * time.Second, retry: 500 * time.Millisecond},
		"--zap-log-level=10", "--api-bind-address", api)

	// 1. The wrong mailbox password: the pump cannot start, and says so.
	await.Eventually(t, "the pump to fail on the wrong mailbox password", waitLong, func() (bool, string) {
		ff := e.feedObject(key)
		c := findCondition(ff, v1alpha1.ConditionPumpRunning)
		return c != nil && c.Reason == string(v1alpha1.ReasonPumpFailed), fmt.Sprintf("%+v", c)
	})

	// 2. The right password: the pump runs (Kafka stays unreachable) and a
	// malformed message goes DEAD.
	var sec corev1.Secret
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "pek-mailbox"}, &sec); err != nil {
		t.Fatal(err)
	}
	sec.Data = map[string][]byte{"dsn": []byte(mailboxDSN(secretMarker + "-mbx"))}
	if err := e.c.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	if err := w.Insert("<MSG><META><TYPE>SCHD</TYPE>", time.Now()); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, "the malformed message DEAD", waitLong, func() (bool, string) {
		r := w.results()
		return r["DEAD"] == 1, fmt.Sprint(r)
	})
	await.Eventually(t, "KafkaReachable False", waitLong, func() (bool, string) {
		c := findCondition(e.feedObject(key), v1alpha1.ConditionKafkaReachable)
		return c != nil && c.Status == metav1.ConditionFalse, fmt.Sprintf("%+v", c)
	})

	// 3. The read API: errors only (its database is unreachable, the
	// flight and the day do not exist or are malformed).
	token := readerToken(t, e)
	var bodies []string
	for _, path := range []string{"/flights", "/flights/123", "/flights?day=bad", "/flights/abc"} {
		code, body := getTLS(t, token, "https://"+api+"/api/v1/feeds/"+e.ns+"/pek"+path)
		if code == http.StatusOK || code == 0 {
			t.Fatalf("read API %s: %d %s, want an error", path, code, body)
		}
		bodies = append(bodies, fmt.Sprintf("%s: %d %s", path, code, body))
	}
	if !strings.Contains(strings.Join(bodies, "\n"), "503") {
		t.Fatalf("the unreachable read-only database gave no 503:\n%s", strings.Join(bodies, "\n"))
	}

	// Every surface, searched.
	_, metrics := proctest.HTTPGet(nil, "http://"+m.metrics+"/metrics")
	surfaces := map[string]string{
		"logs":                  m.Output(),
		"metrics":               metrics,
		"read API error bodies": strings.Join(bodies, "\n"),
		"FlightFeed":            jsonOf(t, e.feedObject(key)),
		"Events":                e.events(t),
		"FlightFeedDays":        e.days(t),
	}
	// The search is only worth something if the logs are the verbose ones:
	// a V(1) line (zap writes it as level "debug"; the pump logs them here
	// for the feed that cannot run and the deliveries that fail) shows that
	// --zap-log-level reached the logger.
	if !strings.Contains(m.Output(), `"level":"debug"`) {
		t.Errorf("the logs hold no V(1) line, so they are not the verbose ones the search needs:\n%s", proctest.Tail(m.Output(), 20))
	}
	for name, text := range surfaces {
		if text == "" {
			t.Errorf("%s: nothing to search", name)
		}
		if i := strings.Index(text, secretMarker); i >= 0 {
			t.Errorf("%s show a credential: …%s…", name, text[max(0, i-200):min(len(text), i+100)])
		}
	}
	if !strings.Contains(m.Output(), "Access denied") && !strings.Contains(m.Output(), "1045") {
		t.Errorf("the logs do not show the refused mailbox login, so the search proves little:\n%s", proctest.Tail(m.Output(), 40))
	}
}

func findCondition(ff *v1alpha1.FlightFeed, t v1alpha1.ConditionType) *metav1.Condition {
	for i := range ff.Status.Conditions {
		if ff.Status.Conditions[i].Type == string(t) {
			return &ff.Status.Conditions[i]
		}
	}
	return nil
}

func (e *env) feedObject(key types.NamespacedName) *v1alpha1.FlightFeed {
	e.t.Helper()
	var ff v1alpha1.FlightFeed
	if err := e.c.Get(e.t.Context(), key, &ff); err != nil {
		e.t.Fatal(err)
	}
	return &ff
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// events are the namespace's Events, both APIs, as JSON.
func (e *env) events(t *testing.T) string {
	t.Helper()
	var core corev1.EventList
	if err := e.c.List(t.Context(), &core, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	var ev eventsv1.EventList
	if err := e.c.List(t.Context(), &ev, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	if len(core.Items)+len(ev.Items) == 0 {
		return ""
	}
	return jsonOf(t, core) + jsonOf(t, ev)
}

func (e *env) days(t *testing.T) string {
	t.Helper()
	var days v1alpha1.FlightFeedDayList
	if err := e.c.List(t.Context(), &days, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	return jsonOf(t, days)
}

// readerToken is a token of a ServiceAccount allowed to read the flights of
// e's namespace, made for the read API of e's feed pek.
func readerToken(t *testing.T, e *env) string {
	t.Helper()
	e.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: e.ns}})
	e.create(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: e.ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds/flights"}, Verbs: []string{"get"}}}})
	e.create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: e.ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: "reader"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"}})
	kube, err := kubernetes.NewForConfig(shared.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(e.ns).CreateToken(t.Context(), "reader", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600),
			Audiences: []string{feednames.Audience(types.NamespacedName{Namespace: e.ns, Name: "pek"})}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// getTLS GETs u from the manager's self-signed read API with the token.
func getTLS(t *testing.T, token, u string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
