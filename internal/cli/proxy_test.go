package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// proxyWorld is deadWorld's feed in a cluster, its pump pod serving the
// read API where envtest's API server proxies to it, and a person who may
// use that proxy but read no Secret.
type proxyWorld struct {
	cfg string // the feed's --config file (the database directly)
	// databaseDSN is the feed's database.
	databaseDSN string
	kubeconfig  string // the person's kubeconfig
	admin       client.Client
	kube        kubernetes.Interface
	env         *envtest.Environment
	restCfg     *rest.Config
}

func newProxyWorld(t *testing.T) proxyWorld {
	t.Helper()
	mailboxDSN, databaseDSN, broker, cfgFile := deadWorld(t)
	restCfg, env := kubetest.Start(t)
	c := kubetest.Client(t, restCfg)
	ctx := t.Context()
	for name, dsn := range map[string]string{"pek-mailbox": mailboxDSN, "pek-db": databaseDSN} {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: "pek"}, Namespace: "default", Name: name},
			StringData: map[string]string{"dsn": dsn}}); err != nil {
			t.Fatal(err)
		}
	}
	ff := &v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pek"}, Spec: v1alpha1.FlightFeedSpec{
		Airport:  v1alpha1.AirportSpec{IATA: "PEK", TimeZone: "Asia/Shanghai"},
		Mailbox:  v1alpha1.MailboxSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "pek-mailbox", Key: "dsn"}, PollInterval: &metav1.Duration{Duration: 50 * time.Millisecond}},
		Database: v1alpha1.DatabaseSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "pek-db", Key: "dsn"}},
		Kafka:    v1alpha1.KafkaSpec{Brokers: []string{broker}},
	}}
	if err := c.Create(ctx, ff); err != nil {
		t.Fatal(err)
	}

	// The pump pod, as the operator's Deployment runs it, its read API on
	// an address the API server can proxy to.
	adminKubeconfig := filepath.Join(t.TempDir(), "admin-kubeconfig")
	if err := kubetest.WriteKubeconfig(restCfg, adminKubeconfig); err != nil {
		t.Fatal(err)
	}
	ip := kubetest.PodIP(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	podCtx, stop := context.WithCancel(context.Background())
	done := make(chan string, 1)
	podLog := &syncBuffer{}
	go func() {
		// The pod's log goes to a buffer that its own goroutines (the
		// event broadcaster) may still write after run returns.
		code := run(podCtx, []string{"pump", "--feed", "default/pek", "--kubeconfig", adminKubeconfig, "--identity", "pek-pump-0",
			"--api-bind-address", net.JoinHostPort(ip, strconv.Itoa(port)), "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
			"--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "300ms", "--status-interval", "300ms"}, io.Discard, podLog)
		done <- fmt.Sprintf("exit %d: %s", code, lastLines(podLog.String(), 20))
	}()
	t.Cleanup(func() {
		stop()
		if out := <-done; !strings.HasPrefix(out, "exit 0") {
			t.Errorf("pump pod: %s", out)
		}
	})
	kubetest.ServeAsPod(t, c, "default", feednames.Pump("pek"), feednames.APIPort, ip, int32(port))

	// The person: may read FlightFeeds, use the proxy to pek's pump
	// Service and make tokens for the ServiceAccount ops; nothing else
	// (no Secret). ops may list pek's messages and record replays.
	person := personKubeconfig(t, env, restCfg, c, "ops-person", []rbacv1.PolicyRule{
		{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds"}, Verbs: []string{"get"}},
		// The proxy's name is the URL's, scheme and port included.
		{APIGroups: []string{""}, Resources: []string{"services/proxy"}, ResourceNames: []string{"https:" + feednames.Pump("pek") + ":" + feednames.APIPort}, Verbs: []string{"get", "create"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{"ops", "viewer"}, Verbs: []string{"create"}},
	})
	serviceAccount(t, c, "ops", []rbacv1.PolicyRule{
		{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds/messages", "flightfeeds/replays"}, Verbs: []string{"get", "create"}},
		{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds/verifications"}, Verbs: []string{"create"}},
	})
	serviceAccount(t, c, "viewer", []rbacv1.PolicyRule{
		{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds/messages"}, Verbs: []string{"get"}},
	})
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	w := proxyWorld{cfg: cfgFile, databaseDSN: databaseDSN, kubeconfig: person, admin: c, kube: kube, env: env, restCfg: restCfg}
	await.Eventually(t, "the pump pod's read API to answer through the proxy", time.Minute, func() (bool, string) {
		code, out, errOut := runCLI(w.ops("dead")...)
		return code == 0, out + errOut
	})
	return w
}

// ops is a command line as the person, through the proxy, with ops's
// token.
func (w proxyWorld) ops(args ...string) []string {
	return append(args, "--feed", "default/pek", "--kubeconfig", w.kubeconfig, "--service-account", "ops")
}

// personKubeconfig adds a user to envtest's API server, gives it rules in
// namespace default and returns its kubeconfig file.
func personKubeconfig(t *testing.T, env *envtest.Environment, restCfg *rest.Config, c client.Client, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	user, err := env.AddUser(envtest.User{Name: name}, restCfg)
	if err != nil {
		t.Fatal(err)
	}
	bind(t, c, name, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}, rules)
	path := filepath.Join(t.TempDir(), name+"-kubeconfig")
	if err := kubetest.WriteKubeconfig(user.Config(), path); err != nil {
		t.Fatal(err)
	}
	return path
}

// serviceAccount makes the ServiceAccount default/name with rules.
func serviceAccount(t *testing.T, c client.Client, name string, rules []rbacv1.PolicyRule) {
	t.Helper()
	if err := c.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
		t.Fatal(err)
	}
	bind(t, c, name, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}, rules)
}

func bind(t *testing.T, c client.Client, name string, subject rbacv1.Subject, rules []rbacv1.PolicyRule) {
	t.Helper()
	if err := c.Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Rules: rules}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Subjects: []rbacv1.Subject{subject}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// With --feed, dead, parked and replay ask the feed's read API, served by
// its pump pod, through the API server's service proxy: the person needs
// Kubernetes RBAC (services/proxy on <feed>-pump) and a token made for the
// feed (audience flightfeed.aero/NS/NAME) whose user may get
// flightfeeds/messages and create flightfeeds/replays; never the feed's
// Secrets nor a route to its database. What they print is what --config
// prints from the database.
func TestOpsCommandsGoThroughTheServiceProxy(t *testing.T) {
	w := newProxyWorld(t)

	// The person really cannot read Secrets: the proxy is their only way.
	personCfg, err := clientcmd.BuildConfigFromFlags("", w.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	personClient := kubetest.Client(t, personCfg)
	if err := personClient.Get(t.Context(), types.NamespacedName{Namespace: "default", Name: "pek-db"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the person reads the database Secret: %v", err)
	}

	for _, args := range [][]string{
		{"dead", "-o", "json"},
		{"dead"},
		{"dead", "--reason", "BAD_FLID", "--since", "2026-09-09T00:00:00Z"},
		{"dead", "--limit", "2", "-o", "json"},
		{"parked"},
	} {
		code, viaProxy, errOut := runCLI(w.ops(args...)...)
		if code != 0 {
			t.Fatalf("%v through the proxy: exit %d: %s", args, code, errOut)
		}
		code, direct, errOut := runCLI(append(args, "--config", w.cfg)...)
		if code != 0 {
			t.Fatalf("%v --config: exit %d: %s", args, code, errOut)
		}
		if viaProxy != direct {
			t.Errorf("%v: through the proxy\n%s\nfrom the database\n%s", args, viaProxy, direct)
		}
	}
	if _, out, _ := runCLI(w.ops("dead", "-o", "json")...); strings.Count(out, "\n") != 3 || !strings.Contains(out, `"reason":"BAD_FLID"`) {
		t.Fatalf("dead -o json: %s", out)
	}

	// replay: refused at once for a message that is not DEAD (the store's
	// reason, 409); recorded for one that is, applied by the leading pump,
	// whose outcome the command reads back through the proxy.
	if code, _, errOut := runCLI(w.ops("replay", "--id", "1", "--policy", "as-new", "--timeout", "1m")...); code != exitFailed ||
		!strings.Contains(errOut, "replay of message 1 refused: it is SUCCEEDED, not DEAD") {
		t.Fatalf("replay --id 1: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(w.ops("replay", "--id", "4", "--policy", "as-new", "--timeout", "1m")...)
	if code != exitFailed || !strings.Contains(out, "replay request 1 recorded: message 4, as-new") ||
		!strings.Contains(out, "message 4 replayed as-new: DEAD") || !strings.Contains(errOut, "the message is DEAD again") {
		t.Fatalf("replay --id 4: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if code, out, errOut := runCLI(w.ops("parked", "--redeliver", "99")...); code != exitFailed || !strings.Contains(out, "0 parked event(s) are PENDING again") ||
		!strings.Contains(errOut, "not parked (delivered, superseded or unknown): event 99") {
		t.Fatalf("parked --redeliver 99: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}

	// Refusals, each saying who refused and what is missing.
	noAudience := filepath.Join(t.TempDir(), "token")
	tr, err := w.kube.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), "ops", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noAudience, []byte(tr.Status.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"dead", "--feed", "default/pek", "--kubeconfig", w.kubeconfig}
	for _, tc := range []struct {
		name string
		args []string
		env  string
		code int
		want string
	}{
		{"no token", base, "", exitUsage, "needs a token made for it: --service-account SA (of namespace default), or --token-file F / $FLIGHTFEED_TOKEN with a token from kubectl -n default create token SA --audience flightfeed.aero/default/pek"},
		{"an API server token", append(base, "--token-file", noAudience), "", exitFailed, `read API of default/pek (401): the bearer token is not valid for this feed: the API server's TokenReview refused it for audience "flightfeed.aero/default/pek"`},
		{"an API server token in the environment", base, tr.Status.Token, exitFailed, "(401)"},
		{"a viewer lists", append(slicesClone(base), "--service-account", "viewer", "--reason", "X"), "", 0, ""},
		{"replay as a viewer", []string{"replay", "--feed", "default/pek", "--kubeconfig", w.kubeconfig, "--service-account", "viewer", "--id", "4", "--policy", "as-new"}, "", exitFailed,
			"read API of default/pek (403): system:serviceaccount:default:viewer may not create flightfeeds/replays of flightfeed default/pek"},
		{"another feed", []string{"dead", "--feed", "default/nope", "--kubeconfig", w.kubeconfig, "--service-account", "ops"}, "", exitFailed, `FlightFeed default/nope: flightfeeds.flightfeed.aero "nope" not found`},
		{"a token for a ServiceAccount the person may not use", append(slicesClone(base), "--service-account", "default"), "", exitFailed, "make a token for ServiceAccount default/default with audience flightfeed.aero/default/pek"},
		{"both sources", append(slicesClone(base), "--config", w.cfg), "", exitUsage, "give either --config F (the database directly) or --feed NAME (its read API in the cluster), not both"},
	} {
		t.Setenv(tokenEnv, tc.env)
		code, out, errOut := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d (want %d)\nstdout %s\nstderr %s\nwant %s", tc.name, code, tc.code, out, errOut, tc.want)
		}
	}

	// Without services/proxy the API server itself refuses, and says so.
	stranger := personKubeconfig(t, w.env, w.restCfg, w.admin, "stranger", []rbacv1.PolicyRule{
		{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{"ops"}, Verbs: []string{"create"}},
	})
	code, _, errOut = runCLI("dead", "--feed", "default/pek", "--kubeconfig", stranger, "--service-account", "ops")
	if code != exitFailed || !strings.Contains(errOut, `reach the read API of default/pek through the API server's service proxy (services/proxy default/https:pek-pump:api): `+
		`services "https:pek-pump:api" is forbidden: User "stranger" cannot get resource "services/proxy" in API group "" in the namespace "default"`) {
		t.Errorf("without services/proxy: exit %d: %s", code, errOut)
	}
}

// verify NAME runs in the pump pod through the service proxy: the same
// report as verify --config (whose differences TestVerifyDay proves),
// recorded as the API's user's;
// a user without create flightfeeds/verifications is refused by the pod.
func TestVerifyGoesThroughTheServiceProxy(t *testing.T) {
	w := newProxyWorld(t)
	execPG(t, w.databaseDSN, `DELETE FROM day_verification`)

	code, viaProxy, errOut := runCLI(w.ops("verify", "--day", "2026-09-09")...)
	if code != 0 || !strings.HasPrefix(viaProxy, "2026-09-09: ") || !strings.Contains(viaProxy, " identical (") {
		t.Fatalf("verify through the proxy: exit %d\n%s%s", code, viaProxy, errOut)
	}
	if got := lastVerification(t, w.databaseDSN, "2026-09-09"); !strings.HasPrefix(got, "IDENTICAL ") || !strings.HasSuffix(got, " api system:serviceaccount:default:ops ") {
		t.Fatalf("recorded %q, want IDENTICAL by the API's user", got)
	}
	if code, direct, errOut := runCLI("verify", "--config", w.cfg, "--day", "2026-09-09"); code != 0 || direct != viaProxy {
		t.Fatalf("verify --config: exit %d %s\n%s\nthrough the proxy:\n%s", code, errOut, direct, viaProxy)
	}
	// The plugin's form, and its document.
	code, out, errOut := runPlugin("verify", "pek", "-n", "default", "--kubeconfig", w.kubeconfig, "--service-account", "ops", "--day", "2026-09-09", "-o", "json")
	var res struct{ Outcome, RanBy string }
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Outcome != "IDENTICAL" || res.RanBy != "api system:serviceaccount:default:ops" {
		t.Fatalf("kubectl flightfeed verify pek -o json: exit %d (%v)\n%s%s", code, err, out, errOut)
	}

	code, _, errOut = runCLI("verify", "--feed", "default/pek", "--kubeconfig", w.kubeconfig, "--service-account", "viewer", "--day", "2026-09-09")
	if code != exitFailed || !strings.Contains(errOut, "read API of default/pek (403): system:serviceaccount:default:viewer may not create flightfeeds/verifications of flightfeed default/pek") {
		t.Fatalf("verify as a viewer: exit %d: %s", code, errOut)
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }
