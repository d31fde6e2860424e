//go:build cluster

package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the mailbox driver
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kfake"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/mysqltest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// The cluster's bridge address (hack/cluster/lib.sh): the node, and the
// machine as the pods see it (PostgreSQL and MariaDB are relayed there).
const hostIP = "10.222.0.1"

// waitLong bounds every wait without a bound of its own; waits are polls
// with deadlines, never assertions on how long something took.
const waitLong = 3 * time.Minute

// clusterPoll is how often a wait asks the cluster again.
const clusterPoll = 100 * time.Millisecond

// suite is the cluster, the chart and the binary under test.
type suite struct {
	t          *testing.T
	c          client.Client
	repo       string
	kubeconfig string
	helm       string
	image      string // full reference of the `make image` image
	binary     string // bin/flightfeed for the host-side commands
	ns         string
	release    string
}

func newSuite(t *testing.T) *suite {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	s := &suite{t: t, repo: filepath.Join(filepath.Dir(file), "..", "..", "..")}
	fix := "make image && bash hack/cluster/up.sh (hack/test.sh does both)"
	s.kubeconfig = env("FLIGHTFEED_CLUSTER_KUBECONFIG", "/var/lib/flightfeed-cluster/admin.kubeconfig")
	if _, err := os.Stat(s.kubeconfig); err != nil {
		t.Fatalf("no local cluster (%v): %s", err, fix)
	}
	ref, err := os.ReadFile(filepath.Join(s.repo, "bin", "flightfeed-image.ref"))
	if err != nil {
		t.Fatalf("no image reference (%v): %s", err, fix)
	}
	s.image = strings.TrimSpace(string(ref))
	s.helm = os.Getenv("FLIGHTFEED_CLUSTER_HELM")
	if s.helm == "" {
		t.Fatalf("FLIGHTFEED_CLUSTER_HELM is not set: export FLIGHTFEED_CLUSTER_HELM=$(bash hack/cluster/helm.sh)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	s.c = kubetest.Client(t, cfg)
	s.binary = proctest.Binary(t)
	s.ns = "ffc-" + utilrand.String(5)
	s.release = "ffc"
	return s
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// run runs a command in the repository and returns its standard output.
func (s *suite) run(name string, args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = s.repo
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

func (s *suite) helmRun(args ...string) string {
	s.t.Helper()
	return s.run(s.helm, append(args, "--namespace", s.ns)...)
}

// ---- one feed's services -----------------------------------------------------------

// world is one feed's PostgreSQL database, MariaDB mailbox and Kafka
// broker, as the host reaches them (config) and as the pods do (podPG,
// podMbox, brokers).
type world struct {
	t              *testing.T
	pgDSN, mboxDSN string
	podPG, podMbox string
	brokers        []string
	config         string
	pool           *pgxpool.Pool
	mbox           *sql.DB
	binary         string
}

// newWorld makes a feed's services. onBridge puts its broker on the
// cluster's bridge, where the pods reach it; otherwise on loopback.
func newWorld(t *testing.T, binary, name string, onBridge bool) *world {
	t.Helper()
	w := &world{t: t, binary: binary, pgDSN: pgtest.New(t), mboxDSN: mysqltest.NewMailbox(t)}
	w.podPG = strings.Replace(w.pgDSN, "127.0.0.1", hostIP, 1)
	w.podMbox = strings.Replace(w.mboxDSN, "127.0.0.1", hostIP, 1)
	if onBridge {
		listen := func(network, address string) (net.Listener, error) {
			_, port, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			var lc net.ListenConfig
			return lc.Listen(context.Background(), network, net.JoinHostPort(hostIP, port))
		}
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ListenFn(listen), kfake.SeedTopics(3, "KAFKA_SCHD", "KAFKA_MSG"))
		if err != nil {
			t.Fatalf("kfake on %s: %v", hostIP, err)
		}
		t.Cleanup(cluster.Close)
		w.brokers = cluster.ListenAddrs()
	} else {
		w.brokers = kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")
	}
	w.config = feedtest.Feed{MailboxDSN: w.mboxDSN, DatabaseDSN: w.pgDSN, Brokers: w.brokers[:1]}.WriteConfig(t, name)
	var err error
	if w.pool, err = pgxpool.New(t.Context(), w.pgDSN); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.pool.Close)
	if w.mbox, err = sql.Open("mysql", w.mboxDSN); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.mbox.Close() })
	return w
}

func (w *world) ff(command string, args ...string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.binary, append([]string{command, "--config", w.config}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("flightfeed %s: %v\n%s", command, err, proctest.Tail(stderr.String(), 30))
	}
	return string(out)
}

func (w *world) lock(ctx context.Context) (holder string, epoch int64, err error) {
	var h *string
	err = w.pool.QueryRow(ctx, `SELECT holder, epoch FROM pipeline_lock WHERE name = $1`, store.LockName).Scan(&h, &epoch)
	return ptr.Deref(h, ""), epoch, err
}

func (w *world) count(db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, query string) int {
	w.t.Helper()
	var n int
	if err := db.QueryRowContext(w.t.Context(), query).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (w *world) processed() int {
	return w.count(w.mbox, `SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`)
}

func (w *world) pendingEvents() int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(w.t.Context(), `SELECT COUNT(*) FROM msg_event_record WHERE id > (SELECT delivered_id FROM msg_event_cursor) AND (id, kind) NOT IN (SELECT event_id, kind FROM msg_event_parked)`).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

func (w *world) insert(body string, received time.Time) error {
	_, err := w.mbox.ExecContext(context.Background(),
		`INSERT INTO CMINMSGS (CMINMSGS_DATE_RECEIVED, CMINMSGS_CLOB_MSG) VALUES (?, ?)`, received.UTC(), body)
	return err
}

// feed inserts rows one every pace in the background, row i received at
// base + i ms (the same for every run fed the same rows).
func (w *world) feed(rows []string, base time.Time, pace time.Duration) (inserted func() int, done <-chan error) {
	var mu sync.Mutex
	n := 0
	ch := make(chan error, 1)
	go func() {
		for i, r := range rows {
			if err := w.insert(r, base.Add(time.Duration(i)*time.Millisecond)); err != nil {
				ch <- err
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			time.Sleep(pace)
		}
		ch <- nil
	}()
	return func() int { mu.Lock(); defer mu.Unlock(); return n }, ch
}

func (w *world) waitDrained(n int) {
	w.t.Helper()
	await.EventuallyEvery(w.t, fmt.Sprintf("all %d mailbox rows processed and the outbox delivered", n), waitLong, clusterPoll, func() (bool, string) {
		p, e := w.processed(), w.pendingEvents()
		return p == n && e == 0, fmt.Sprintf("%d of %d processed, %d events pending", p, n, e)
	})
}

var rqfdDay = regexp.MustCompile(`<STDB>(\d{2}[A-Za-z]{3}\d{2})0000</STDB>`)

// waitRequest waits for the pump's full-day request and returns its day.
func (w *world) waitRequest(loc *time.Location) string {
	w.t.Helper()
	var day string
	await.EventuallyEvery(w.t, "the pump's RQFD in COUTMSGS", waitLong, clusterPoll, func() (bool, string) {
		var body string
		err := w.mbox.QueryRowContext(w.t.Context(),
			`SELECT COUTMSGS_CLOB_MSG FROM COUTMSGS WHERE COUTMSGS_CLOB_MSG LIKE '%<TYPE>RQFD</TYPE>%' ORDER BY COUTMSGS_ID LIMIT 1`).Scan(&body)
		if err != nil {
			return false, err.Error()
		}
		m := rqfdDay.FindStringSubmatch(body)
		if m == nil {
			return false, "a request without a day: " + body
		}
		d, err := time.ParseInLocation("02Jan06", m[1], loc)
		if err != nil {
			return false, err.Error()
		}
		day = d.Format(time.DateOnly)
		return true, ""
	})
	return day
}

func (w *world) mailboxDump() string { return mysqltest.Results(w.t, w.mbox) }

// sessions counts the database sessions of a pod (its application_name is
// its identity, the pod name).
func (w *world) sessions(pod string) int {
	var n int
	_ = w.pool.QueryRow(context.Background(), `SELECT COUNT(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, pod).Scan(&n)
	return n
}

// workload is a day of the AODB: the RESP answering the full-day request,
// then four rounds of traffic from `flightfeed simulate`'s generator with
// fixed seeds (the same rows for every run).
func workload(day string, loc *time.Location) []string {
	rows := []string{simulate.Response(simulate.Options{Day: day, Flights: 30, Seed: 1, FirstSeqn: 1, Location: loc}).Body}
	for k := range 4 {
		for _, m := range simulate.Stream(simulate.Options{Day: day, Flights: 30, Seed: uint64(k + 2),
			FirstSeqn: 1000 * (k + 1), Malformed: 2, Location: loc}) {
			rows = append(rows, m.Body)
		}
	}
	return rows
}

// ---- the release's pods ------------------------------------------------------------

// managerPods selects the release's manager pods (the chart's selector
// labels), not the pod `helm test` leaves behind.
func (s *suite) managerPods() client.MatchingLabels {
	return client.MatchingLabels{"app.kubernetes.io/instance": s.release, "app.kubernetes.io/component": "manager"}
}

func (s *suite) pods() []corev1.Pod {
	s.t.Helper()
	var l corev1.PodList
	if err := s.c.List(s.t.Context(), &l, client.InNamespace(s.ns),
		s.managerPods()); err != nil {
		s.t.Fatal(err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

func ready(p corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPods waits for exactly n pods of the release, all Running and Ready,
// none of them in except; returns them.
func (s *suite) waitPods(n int, except map[string]bool) []corev1.Pod {
	s.t.Helper()
	var out []corev1.Pod
	await.EventuallyEvery(s.t, fmt.Sprintf("%d Running and Ready replicas", n), waitLong, clusterPoll, func() (bool, string) {
		out = s.pods()
		var desc []string
		ok := len(out) == n
		for _, p := range out {
			desc = append(desc, fmt.Sprintf("%s %s ready=%v", p.Name, p.Status.Phase, ready(p)))
			ok = ok && ready(p) && !except[p.Name]
		}
		return ok, strings.Join(desc, ", ")
	})
	return out
}

// httpClient scrapes the pods' self-signed HTTPS metrics endpoints (the
// token authenticates; the certificate is not verified, as curl -k).
var httpClient = &http.Client{Timeout: time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the manager's self-signed certificate
}}

// scrapeToken is the token of the ServiceAccount the chart lets get /metrics.
var scrapeToken string

// pumpRunning scrapes a pod's flightfeed_pump_running for the feed: 1 or 0,
// -1 when the pod does not answer.
func pumpRunning(p corev1.Pod, key types.NamespacedName) float64 {
	if p.Status.PodIP == "" {
		return -1
	}
	req, err := http.NewRequest(http.MethodGet, "https://"+net.JoinHostPort(p.Status.PodIP, "8080")+"/metrics", nil)
	if err != nil {
		return -1
	}
	req.Header.Set("Authorization", "Bearer "+scrapeToken)
	resp, err := httpClient.Do(req)
	if err != nil {
		return -1
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "flightfeed_pump_running{") && strings.Contains(line, `feed="`+key.Name+`"`) &&
			strings.Contains(line, `feed_namespace="`+key.Namespace+`"`) {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			return v
		}
	}
	return 0
}

func (s *suite) leaseHolder(key types.NamespacedName) string {
	var l coordinationv1.Lease
	if err := s.c.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: pumppod.FeedLeaseName(key)}, &l); err != nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// pumpMonitor samples every pod of the release every 200 ms and records
// each moment more than one pump ran.
type pumpMonitor struct {
	mu      sync.Mutex
	samples int
	two     []string
	stop    chan struct{}
	done    chan struct{}
}

func (s *suite) monitorPumps(key types.NamespacedName) *pumpMonitor {
	m := &pumpMonitor{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			var l corev1.PodList
			if err := s.c.List(context.Background(), &l, client.InNamespace(s.ns),
				s.managerPods()); err == nil {
				var running []string
				for _, p := range l.Items {
					if pumpRunning(p, key) == 1 {
						running = append(running, p.Name)
					}
				}
				m.mu.Lock()
				m.samples++
				if len(running) > 1 {
					m.two = append(m.two, time.Now().Format("15:04:05.000")+" "+strings.Join(running, "+"))
				}
				m.mu.Unlock()
			}
			select {
			case <-m.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return m
}

func (m *pumpMonitor) halt() (samples int, two []string) {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.samples, m.two
}

// ---- the test ----------------------------------------------------------------------

// TestHelmInstallOnRealCluster installs the chart with the local image on
// the real cluster and checks what SPEC §4 promises its users: two Ready
// replicas and one pump; a simulated day applied, the FlightFeedDays equal
// to the ledger; the leader pod deleted in the middle of the day and the
// other replica taking over within the lease duration + 10 s with nothing
// lost (export, ledger and mailbox equal an uninterrupted run's); `helm
// upgrade` with a changed value rolling the pods without two pumps at once;
// `helm uninstall` leaving the CRDs (crds.keep) and the data.
func TestHelmInstallOnRealCluster(t *testing.T) {
	s := newSuite(t)
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	lap := time.Now()
	timing := func(what string) {
		t.Logf("timing: %-48s %5.1fs", what, time.Since(lap).Seconds())
		lap = time.Now()
	}

	// A fresh cluster: the chart's CRDs must be its own to check crds.keep.
	var crd apiextensionsv1.CustomResourceDefinition
	if err := s.c.Get(t.Context(), types.NamespacedName{Name: "flightfeeds.flightfeed.aero"}, &crd); err == nil {
		t.Fatalf("the FlightFeed CRD is already installed (by %q): run this test on a fresh cluster: bash hack/cluster/down.sh && bash hack/cluster/up.sh",
			crd.Annotations["meta.helm.sh/release-name"])
	}

	// 1. helm install with the local image; both replicas Running and Ready.
	tag := s.image[strings.LastIndexByte(s.image, ':')+1:]
	s.run(s.helm, "install", s.release, "charts/flightfeed", "--namespace", s.ns, "--create-namespace",
		"--set", "image.repository=flightfeed", "--set", "image.tag="+tag, "--wait", "--timeout", "3m",
		// The metrics are HTTPS with a bearer token: the chart binds this
		// ServiceAccount to its metrics-reader ClusterRole.
		"--set", "metrics.scrapers[0].namespace="+s.ns, "--set", "metrics.scrapers[0].name=scraper")
	s.run("kubectl", "-n", s.ns, "create", "serviceaccount", "scraper")
	scrapeToken = strings.TrimSpace(s.run("kubectl", "-n", s.ns, "create", "token", "scraper", "--duration", "2h"))
	t.Cleanup(func() {
		// Best effort: the cluster is torn down after the test anyway.
		_ = exec.Command(s.helm, "uninstall", s.release, "--namespace", s.ns, "--kubeconfig", s.kubeconfig).Run()
	})
	first := s.waitPods(2, nil)
	for _, p := range first {
		if got := p.Spec.Containers[0].Image; got != "flightfeed:"+tag {
			t.Errorf("pod %s runs %s, want the local image flightfeed:%s", p.Name, got, tag)
		}
		if id := p.Status.ContainerStatuses[0].ImageID; !strings.Contains(id, "sha256:") {
			t.Errorf("pod %s: image ID %q", p.Name, id)
		}
	}
	timing("helm install, 2 replicas Ready")
	// helm test: the chart's selftest Pod (the operator's own image) finds
	// the CRDs Established and both managers answering /readyz; helm exits
	// non-zero (s.run fails the test) when the Pod does not succeed.
	if out := s.helmRun("test", s.release, "--timeout", "3m"); !strings.Contains(out, "Succeeded") {
		t.Errorf("helm test: no test succeeded:\n%s", out)
	}
	timing("helm test")

	// 2. The feed: Secrets with DSNs the pods reach, the FlightFeed.
	w := newWorld(t, s.binary, "cluster", true)
	key := types.NamespacedName{Namespace: s.ns, Name: "pek"}
	for name, dsn := range map[string]string{"pek-mailbox": w.podMbox, "pek-db": w.podPG} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Name: name, Namespace: s.ns}, StringData: map[string]string{"dsn": dsn}}
		if err := s.c.Create(t.Context(), sec); err != nil {
			t.Fatal(err)
		}
	}
	doc := feedtest.Feed{Brokers: w.brokers[:1]}.Manifest("pek", s.ns)
	var feed unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &feed.Object); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Create(t.Context(), &feed); err != nil {
		t.Fatal(err)
	}

	// Exactly one pump: the Lease holder's, which holds pipeline_lock; the
	// other replica runs none and has no session on the feed's database.
	var holder string
	var epoch1 int64
	await.EventuallyEvery(t, "a Lease holder that holds pipeline_lock", waitLong, clusterPoll, func() (bool, string) {
		lh := s.leaseHolder(key)
		ph, ep, err := w.lock(t.Context())
		if err != nil {
			return false, err.Error()
		}
		holder, epoch1 = lh, ep
		return lh != "" && lh == ph && ep > 0, fmt.Sprintf("Lease %q, pipeline_lock %q@%d", lh, ph, ep)
	})
	day := w.waitRequest(loc)
	await.EventuallyEvery(t, "exactly one pump, the holder's", 30*time.Second, clusterPoll, func() (bool, string) {
		var desc []string
		ok := true
		for _, p := range s.pods() {
			r := pumpRunning(p, key)
			desc = append(desc, fmt.Sprintf("%s pump_running=%v sessions=%d", p.Name, r, w.sessions(p.Name)))
			if p.Name == holder {
				ok = ok && r == 1
			} else {
				ok = ok && r == 0 && w.sessions(p.Name) == 0
			}
		}
		return ok, strings.Join(desc, "; ")
	})
	timing("FlightFeed applied, one pump, RQFD sent")

	// 3. A simulated day, fed one row every 10 ms; the leader pod is deleted
	// once a third is processed.
	mon := s.monitorPumps(key)
	rows := workload(day, loc)
	base := time.Now().UTC().Truncate(time.Second)
	inserted, fed := w.feed(rows, base, 10*time.Millisecond)
	await.EventuallyEvery(t, "a third of the day processed", waitLong, clusterPoll, func() (bool, string) {
		n := w.processed()
		return n >= len(rows)/3, fmt.Sprintf("%d of %d", n, len(rows))
	})
	standby := ""
	for _, p := range first {
		if p.Name != holder {
			standby = p.Name
		}
	}
	deletedAt := time.Now()
	if err := s.c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: holder, Namespace: s.ns}}); err != nil {
		t.Fatal(err)
	}
	atDelete, insertedAtDelete := w.processed(), inserted()
	if atDelete >= len(rows) || insertedAtDelete >= len(rows) {
		t.Fatalf("the day was over before the delete (%d processed, %d inserted of %d)", atDelete, insertedAtDelete, len(rows))
	}
	// The other replica takes over: the standby, or the Deployment's
	// replacement for the deleted pod when it asks first.
	leaseDuration := 15 * time.Second // the chart's lease.duration
	var epoch2 int64
	var next string
	await.EventuallyEvery(t, "another replica to take the Lease and a newer epoch", time.Until(deletedAt.Add(leaseDuration+10*time.Second)), clusterPoll, func() (bool, string) {
		lh := s.leaseHolder(key)
		ph, ep, err := w.lock(t.Context())
		if err != nil {
			return false, err.Error()
		}
		next, epoch2 = lh, ep
		return lh != "" && lh != holder && ph == lh && ep > epoch1, fmt.Sprintf("Lease %q, pipeline_lock %q@%d", lh, ph, ep)
	})
	who := "the standby"
	if next != standby {
		who = "the Deployment's replacement"
	}
	t.Logf("%s deleted with %d of %d rows processed; %s %s took over after %.1fs (epoch %d → %d)",
		holder, atDelete, len(rows), who, next, time.Since(deletedAt).Seconds(), epoch1, epoch2)
	if err := <-fed; err != nil {
		t.Fatal(err)
	}
	w.waitDrained(len(rows))
	timing("a day fed, leader deleted, takeover, drained")

	// FlightFeedDay versions equal the ledger.
	ledger := w.ff("ledger")
	await.EventuallyEvery(t, "FlightFeedDays equal to the ledger", 60*time.Second, clusterPoll, func() (bool, string) {
		got, want := s.days(), ledgerVersions(t, ledger)
		return got == want && want != "", fmt.Sprintf("FlightFeedDays %s, ledger %s", got, want)
	})

	// Nothing lost: the same rows, one uninterrupted `flightfeed pump --drain`.
	export := w.ff("export")
	clean := newWorld(t, s.binary, "clean", false)
	for i, r := range rows {
		if err := clean.insert(r, base.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	clean.ff("pump", "--drain")
	if got, want := versionField.ReplaceAllString(export, ""), versionField.ReplaceAllString(clean.ff("export"), ""); got != want {
		t.Errorf("export after the takeover differs from an uninterrupted run's:\n--- takeover\n%s\n--- uninterrupted\n%s", got, want)
	}
	if want := clean.ff("ledger"); ledger != want {
		t.Errorf("ledger after the takeover:\n%s\nuninterrupted:\n%s", ledger, want)
	}
	if got, want := w.mailboxDump(), clean.mailboxDump(); got != want {
		t.Errorf("mailbox after the takeover differs from an uninterrupted run's:\n--- takeover\n%s\n--- uninterrupted\n%s", got, want)
	}
	timing("compared with an uninterrupted run")

	// 4. helm upgrade with a changed value rolls the pods, one pump at a time.
	s.waitPods(2, nil)
	before := map[string]bool{}
	for _, p := range s.pods() {
		before[p.Name] = true
	}
	s.helmRun("upgrade", s.release, "charts/flightfeed", "--reuse-values", "--set", "lease.duration=20s", "--wait", "--timeout", "3m")
	rolled := s.waitPods(2, before)
	for _, p := range rolled {
		if !strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--lease-duration=20s") {
			t.Errorf("pod %s after the upgrade: args %v", p.Name, p.Spec.Containers[0].Args)
		}
	}
	await.EventuallyEvery(t, "one pump on a new pod after the upgrade", waitLong, clusterPoll, func() (bool, string) {
		lh := s.leaseHolder(key)
		ph, _, err := w.lock(t.Context())
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, p := range rolled {
			if pumpRunning(p, key) == 1 {
				n++
			}
		}
		return lh != "" && !before[lh] && lh == ph && n == 1, fmt.Sprintf("Lease %q, pipeline_lock %q, %d pumps running", lh, ph, n)
	})
	samples, two := mon.halt()
	if len(two) > 0 {
		t.Errorf("two pumps ran at once (%d of %d samples): %v", len(two), samples, two)
	}
	t.Logf("%d samples of every pod's pump from the first row to the end of the upgrade: never two pumps", samples)
	timing("helm upgrade rolled the pods")

	// 5. helm uninstall: the CRDs stay (crds.keep), with the FlightFeed, its
	// FlightFeedDays and the data.
	s.helmRun("uninstall", s.release, "--wait", "--timeout", "2m")
	await.EventuallyEvery(t, "the release's pods gone", waitLong, clusterPoll, func() (bool, string) {
		p := s.pods()
		return len(p) == 0, fmt.Sprintf("%d pods", len(p))
	})
	var dep appsv1.DeploymentList
	if err := s.c.List(t.Context(), &dep, client.InNamespace(s.ns)); err != nil || len(dep.Items) != 0 {
		t.Errorf("after uninstall: %d Deployments (%v)", len(dep.Items), err)
	}
	for _, name := range []string{"flightfeeds.flightfeed.aero", "flightfeeddays.flightfeed.aero"} {
		if err := s.c.Get(t.Context(), types.NamespacedName{Name: name}, &crd); err != nil {
			t.Errorf("CRD %s after helm uninstall: %v", name, err)
		}
	}
	var ff v1alpha1.FlightFeed
	if err := s.c.Get(t.Context(), key, &ff); err != nil {
		t.Errorf("the FlightFeed after helm uninstall: %v", err)
	}
	if got, want := s.days(), ledgerVersions(t, ledger); got != want {
		t.Errorf("FlightFeedDays after helm uninstall: %s, want %s", got, want)
	}
	if got := w.ff("ledger"); got != ledger {
		t.Errorf("the ledger after helm uninstall:\n%s\nwant\n%s", got, ledger)
	}
	timing("helm uninstall kept the CRDs and the data")
}

// days lists the feed's FlightFeedDays as "day=version ..." in day order.
func (s *suite) days() string {
	var l v1alpha1.FlightFeedDayList
	if err := s.c.List(context.Background(), &l, client.InNamespace(s.ns)); err != nil {
		return err.Error()
	}
	var out []string
	for _, d := range l.Items {
		out = append(out, fmt.Sprintf("%s=%d", d.Spec.Day, d.Status.Version))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// ledgerVersions is `flightfeed ledger` output as "day=version ...".
func ledgerVersions(t *testing.T, ledger string) string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(ledger), "\n") {
		if line == "" {
			continue
		}
		var d struct {
			Day     string `json:"day"`
			Version int64  `json:"version"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("ledger line %q: %v", line, err)
		}
		out = append(out, fmt.Sprintf("%s=%d", d.Day, d.Version))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// versionField strips what differs between two runs of the same input:
// state versions and commit times.
var versionField = regexp.MustCompile(`"STATE_VERSION":\d+,?|"UPDATED_AT":"[^"]*",?`)
