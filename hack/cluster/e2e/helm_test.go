//go:build cluster

package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the mailbox driver
	"github.com/twmb/franz-go/pkg/kfake"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
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
	ns         string // the release's
	feedNS     string // the FlightFeeds' and their pump pods'
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
	s.feedNS = s.ns + "-feeds"
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
// broker (proctest.World: its --config names them as the host reaches
// them) and the DSNs as the pods reach them (podPG, podMbox).
type world struct {
	*proctest.World
	podPG, podMbox string
}

// newWorld makes a feed's services. onBridge puts its broker on the
// cluster's bridge, where the pods reach it; otherwise on loopback.
func newWorld(t *testing.T, binary, name string, onBridge bool) *world {
	t.Helper()
	var brokers []string
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
		brokers = cluster.ListenAddrs()[:1]
	}
	w := &world{World: proctest.NewWorld(t, name, binary, proctest.WorldOptions{Brokers: brokers})}
	w.podPG = strings.Replace(w.DatabaseDSN, "127.0.0.1", hostIP, 1)
	w.podMbox = strings.Replace(w.MailboxDSN, "127.0.0.1", hostIP, 1)
	return w
}

// feed inserts rows one every pace in the background, row i received at
// base + i ms (the same for every run fed the same rows).
func (w *world) feed(rows []string, base time.Time, pace time.Duration) (inserted func() int, done <-chan error) {
	var mu sync.Mutex
	n := 0
	ch := make(chan error, 1)
	go func() {
		for i, r := range rows {
			if err := w.Insert(r, base.Add(time.Duration(i)*time.Millisecond)); err != nil {
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

func (w *world) waitDrained(n int) { w.WaitDrained(n, waitLong, clusterPoll) }

// workload is a day of the AODB: the RESP answering the full-day request,
// then four rounds of traffic from `flightfeed simulate`'s generator with
// fixed seeds (the same rows for every run).
func workload(day string, loc *time.Location) []string { return proctest.Workload(day, loc, 30, 4) }

// traffic is rounds from..to-1 of the day's traffic after the RESP.
func traffic(day string, loc *time.Location, from, to int) []string {
	return proctest.Traffic(day, loc, 30, from, to)
}

// ---- the release's pods ------------------------------------------------------------

// operatorPods selects the release's operator pods (the chart's selector
// labels; before the upgrade, the previous release's managers, which ran
// the pumps), not the pod `helm test` leaves behind.
func (s *suite) operatorPods() []corev1.Pod {
	return s.list(s.ns, client.MatchingLabels{"app.kubernetes.io/instance": s.release, "app.kubernetes.io/component": "manager"})
}

// pumpPods are the pods of the feed's pump Deployment <feed>-pump.
func (s *suite) pumpPods(key types.NamespacedName) []corev1.Pod {
	return s.list(key.Namespace, client.MatchingLabels(feednames.PodLabels(key.Name)))
}

func (s *suite) list(ns string, sel client.MatchingLabels) []corev1.Pod {
	s.t.Helper()
	var l corev1.PodList
	if err := s.c.List(context.Background(), &l, client.InNamespace(ns), sel); err != nil {
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

// waitPods waits for exactly n pods listed by pods, all Running and Ready,
// none of them in except; returns them.
func (s *suite) waitPods(what string, pods func() []corev1.Pod, n int, except map[string]bool) []corev1.Pod {
	s.t.Helper()
	var out []corev1.Pod
	await.EventuallyEvery(s.t, fmt.Sprintf("%d Running and Ready %s", n, what), waitLong, clusterPoll, func() (bool, string) {
		out = pods()
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
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the pods' self-signed certificates
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
	v, _ := proctest.FeedMetric(string(body), "flightfeed_pump_running", key.Namespace, key.Name)
	return v
}

// leaseHolder is the holder of the feed's Lease in namespace ns: the
// feed's own (the pump pods') or, before the upgrade, the operator's
// namespace (the previous release's managers).
func (s *suite) leaseHolder(ns string, key types.NamespacedName) string {
	h, _ := proctest.LeaseHolder(context.Background(), s.c, ns, feednames.Lease(key))
	return h
}

// pumpMonitor samples, every 200 ms, every pod that may run a feed's pump
// (the release's operator pods, which did before the upgrade, and the
// feed's pump pods) and records each moment more than one ran it.
type pumpMonitor struct {
	mu      sync.Mutex
	samples int
	two     []string
	stop    chan struct{}
	done    chan struct{}
}

// every runs sample every 200 ms in the background until stop is closed,
// then closes done.
func every(stop, done chan struct{}, sample func()) {
	go func() {
		defer close(done)
		for {
			sample()
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

func (s *suite) monitorPumps(keys ...types.NamespacedName) *pumpMonitor {
	m := &pumpMonitor{stop: make(chan struct{}), done: make(chan struct{})}
	every(m.stop, m.done, func() {
		var mgr corev1.PodList
		_ = s.c.List(context.Background(), &mgr, client.InNamespace(s.ns),
			client.MatchingLabels{"app.kubernetes.io/instance": s.release, "app.kubernetes.io/component": "manager"})
		for _, key := range keys {
			var pods corev1.PodList
			_ = s.c.List(context.Background(), &pods, client.InNamespace(key.Namespace), client.MatchingLabels(feednames.PodLabels(key.Name)))
			var running []string
			for _, p := range append(mgr.Items, pods.Items...) {
				if pumpRunning(p, key) == 1 {
					running = append(running, p.Name)
				}
			}
			m.mu.Lock()
			m.samples++
			if len(running) > 1 {
				m.two = append(m.two, time.Now().Format("15:04:05.000")+" "+key.Name+": "+strings.Join(running, "+"))
			}
			m.mu.Unlock()
		}
	})
	return m
}

func (m *pumpMonitor) halt() (samples int, two []string) {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.samples, m.two
}

// progress samples a feed's processed rows every 200 ms and records the
// longest time it made no progress while rows were waiting.
type progress struct {
	mu      sync.Mutex
	longest time.Duration
	stop    chan struct{}
	done    chan struct{}
}

func watchProgress(w *world, inserted func() int) *progress {
	p := &progress{stop: make(chan struct{}), done: make(chan struct{})}
	last, since := -1, time.Now()
	every(p.stop, p.done, func() {
		var n int
		if err := w.Mailbox.QueryRowContext(context.Background(),
			`SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&n); err == nil {
			now := time.Now()
			if n != last || n >= inserted() {
				last, since = n, now
			}
			p.mu.Lock()
			p.longest = max(p.longest, now.Sub(since))
			p.mu.Unlock()
		}
	})
	return p
}

func (p *progress) halt() time.Duration {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.longest
}

// feedWorld is one FlightFeed on the cluster with its services.
type feedWorld struct {
	*world
	key types.NamespacedName
}

// newFeed makes a feed's services, its Secrets (the DSNs the pods reach)
// and its FlightFeed in the feed namespace.
func (s *suite) newFeed(name string) *feedWorld {
	s.t.Helper()
	f := &feedWorld{world: newWorld(s.t, s.binary, name, true)}
	// The pods reach this machine's services at hostIP, in plain text; the
	// opt-in to it is made after the upgrade (optInPlaintext), as the
	// upgrade notes say: the previous release's CRD would prune its mode
	// and leave tls: {}, which that release reads as TLS.
	f.key = proctest.ApplyFeed(s.t, s.c, s.feedNS, name, feedtest.Feed{MailboxDSN: f.podMbox, DatabaseDSN: f.podPG, Brokers: f.Brokers})
	return f
}

// optInPlaintext opts f's mailbox and database in to plain text (this
// release refuses plain text beyond loopback without it).
func (s *suite) optInPlaintext(f *feedWorld) {
	s.t.Helper()
	ff := &v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Namespace: f.key.Namespace, Name: f.key.Name}}
	patch := []byte(`{"spec":{"mailbox":{"tls":{"mode":"disable"}},"database":{"tls":{"mode":"disable"}}}}`)
	if err := s.c.Patch(s.t.Context(), ff, client.RawPatch(types.MergePatchType, patch)); err != nil {
		s.t.Fatalf("opt %s in to plain text: %v", f.key, err)
	}
}

// waitLeader waits until the holder of the feed's Lease in namespace ns
// holds pipeline_lock at an epoch above after, and returns both.
func (s *suite) waitLeader(f *feedWorld, ns string, after int64, within time.Duration, not ...string) (string, int64) {
	s.t.Helper()
	var holder string
	var epoch int64
	await.EventuallyEvery(s.t, fmt.Sprintf("%s: a Lease holder in %s holding pipeline_lock above epoch %d", f.key.Name, ns, after), within, clusterPoll, func() (bool, string) {
		lh := s.leaseHolder(ns, f.key)
		ph, ep, err := f.Lock(s.t.Context())
		if err != nil {
			return false, err.Error()
		}
		holder, epoch = lh, ep
		return lh != "" && lh == ph && ep > after && !slices.Contains(not, lh), fmt.Sprintf("Lease %q, pipeline_lock %q@%d", lh, ph, ep)
	})
	return holder, epoch
}

// checkOnePump checks, on the feed's pump pods, that the Lease holder alone
// runs the pump and holds database sessions, and the standby none (its
// sessions are told by application_name, the pod's name).
func (s *suite) checkOnePump(f *feedWorld, holder string) {
	s.t.Helper()
	await.EventuallyEvery(s.t, f.key.Name+": exactly one pump, the holder's, with the only sessions", 30*time.Second, clusterPoll, func() (bool, string) {
		var desc []string
		ok := true
		pods := s.pumpPods(f.key)
		for _, p := range pods {
			r := pumpRunning(p, f.key)
			n, err := f.Sessions(p.Name)
			if err != nil {
				s.t.Fatalf("count %s's database sessions: %v", p.Name, err)
			}
			desc = append(desc, fmt.Sprintf("%s pump_running=%v sessions=%d", p.Name, r, n))
			if p.Name == holder {
				ok = ok && r == 1 && n >= 1
			} else {
				ok = ok && r == 0 && n == 0
			}
		}
		return ok && len(pods) == 2, strings.Join(desc, "; ")
	})
}

// compareWithUninterrupted feeds the same rows (row i received at base +
// i ms) into a fresh world drained by one `flightfeed pump --drain`, and
// compares export, ledger and mailbox.
func compareWithUninterrupted(t *testing.T, f *feedWorld, binary string, batches []batch) (ledger string) {
	t.Helper()
	clean := newWorld(t, binary, f.key.Name+"-clean", false)
	for _, b := range batches {
		clean.Put(b.rows, b.base)
	}
	clean.Run("pump", "--drain")
	if got, want := check.Mask(f.Run("export")), check.Mask(clean.Run("export")); got != want {
		t.Errorf("%s: export differs from an uninterrupted run's:\n--- cluster\n%s\n--- uninterrupted\n%s", f.key.Name, got, want)
	}
	ledger = f.Run("ledger")
	if want := clean.Run("ledger"); ledger != want {
		t.Errorf("%s: ledger:\n%s\nuninterrupted:\n%s", f.key.Name, ledger, want)
	}
	if got, want := f.MailboxDump(), clean.MailboxDump(); got != want {
		t.Errorf("%s: mailbox differs from an uninterrupted run's:\n--- cluster\n%s\n--- uninterrupted\n%s", f.key.Name, got, want)
	}
	return ledger
}

// batch is rows fed from base.
type batch struct {
	rows []string
	base time.Time
}

// podMemory reads a pod's memory cgroup (cgroup v1, the kubelet's cgroupfs
// driver): current RSS and the peak usage, in MiB; ok false when not found.
func podMemory(p corev1.Pod) (rss, peak float64, ok bool) {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/memory/kubepods*/*/pod" + string(p.UID))
	more, _ := filepath.Glob("/sys/fs/cgroup/memory/kubepods*/pod" + string(p.UID))
	dirs = append(dirs, more...)
	if len(dirs) == 0 {
		return 0, 0, false
	}
	stat, err := os.ReadFile(filepath.Join(dirs[0], "memory.stat"))
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(stat), "\n") {
		if v, found := strings.CutPrefix(line, "total_rss "); found {
			n, _ := strconv.ParseFloat(v, 64)
			rss = n / (1 << 20)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dirs[0], "memory.max_usage_in_bytes")); err == nil {
		n, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		peak = n / (1 << 20)
	}
	return rss, peak, true
}

// sigkillPump SIGKILLs the processes of the pump container of pod (not its
// sandbox's pause), found in the pod's cgroup on this machine (the test
// runs on the cluster's node, as root), and returns their pids. The
// kubelet restarts the container; the pod is not deleted.
func sigkillPump(t *testing.T, s *suite, key types.NamespacedName, pod string) []int {
	t.Helper()
	var p corev1.Pod
	if err := s.c.Get(t.Context(), types.NamespacedName{Namespace: key.Namespace, Name: pod}, &p); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, pattern := range []string{"/sys/fs/cgroup/pids/kubepods*/*/pod%s/*/cgroup.procs", "/sys/fs/cgroup/pids/kubepods*/pod%s/*/cgroup.procs"} {
		files, _ := filepath.Glob(fmt.Sprintf(pattern, p.UID))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, field := range strings.Fields(string(b)) {
				pid, err := strconv.Atoi(field)
				if err != nil {
					continue
				}
				if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "flightfeed" {
					pids = append(pids, pid)
				}
			}
		}
	}
	if len(pids) == 0 {
		t.Fatalf("no flightfeed process in pod %s's cgroup (uid %s)", pod, p.UID)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 %d (%s): %v", pid, pod, err)
		}
	}
	return pids
}

// ---- the test ----------------------------------------------------------------------

// previousCommit is the last release whose pumps ran inside the operator's
// replicas (before each feed ran in pump pods of its own): its chart and image are what
// `helm upgrade` starts from.
const previousCommit = "6d8dea4"

// TestHelmInstallOnRealCluster checks what docs/architecture.md promises on a real
// cluster, starting where an installed user is: the previous release (its
// chart from git, its image built from that commit) running two feeds
// inside its operator replicas; `helm upgrade` to this chart in the middle
// of a day moves each feed to pump pods of its own with never two pumps at
// once and nothing lost; `kubectl get pods` shows the operator and each
// feed's two pump pods, the leader alone with database sessions; the
// leader pump pod of one feed deleted mid-day, the standby (or its
// replacement) taking over within the lease duration + 10 s while the
// other feed never pauses, then the new leader's container SIGKILLed and a
// new pump taking over within that bound too; export, ledger and mailbox of both feeds equal
// to an uninterrupted run's, the FlightFeedDays to the ledger; `helm
// uninstall` keeping the CRDs, the FlightFeeds and the data.
func TestHelmInstallOnRealCluster(t *testing.T) {
	s := newSuite(t)
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	lap := time.Now()
	timing := func(what string) {
		t.Logf("timing: %-56s %5.1fs", what, time.Since(lap).Seconds())
		lap = time.Now()
	}

	// A fresh cluster: the chart's CRDs must be its own to check crds.keep.
	var crd apiextensionsv1.CustomResourceDefinition
	if err := s.c.Get(t.Context(), types.NamespacedName{Name: "flightfeeds.flightfeed.aero"}, &crd); err == nil {
		t.Fatalf("the FlightFeed CRD is already installed (by %q): run this test on a fresh cluster: bash hack/cluster/down.sh && bash hack/cluster/up.sh",
			crd.Annotations["meta.helm.sh/release-name"])
	}

	// 0. The previous release: its chart from git, its image built from
	// that commit (cached) and imported into the cluster.
	prevChart := filepath.Join(t.TempDir(), "previous")
	if err := os.MkdirAll(prevChart, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", "git archive --format=tar "+previousCommit+" charts/flightfeed | tar -x -C "+prevChart)
	archive.Dir = s.repo
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("the previous chart from git: %v\n%s", err, out)
	}
	prevChart = filepath.Join(prevChart, "charts", "flightfeed")
	// Cached by commit: hack/test.sh builds it beforehand, in idle time.
	prev := strings.Fields(s.run("bash", "hack/cluster/previous-image.sh", previousCommit))
	if len(prev) != 2 {
		t.Fatalf("hack/cluster/previous-image.sh printed %q", prev)
	}
	s.run("bash", "hack/cluster/load-image.sh", prev[0])
	prevTag := prev[1][strings.LastIndexByte(prev[1], ':')+1:]
	tag := s.image[strings.LastIndexByte(s.image, ':')+1:]
	timing("the previous release's image")

	// 1. helm install of the previous release; its two replicas Ready.
	s.run(s.helm, "install", s.release, prevChart, "--namespace", s.ns, "--create-namespace",
		"--set", "image.repository=flightfeed", "--set", "image.tag="+prevTag, "--wait", "--timeout", "3m",
		// The metrics are HTTPS with a bearer token: the chart binds this
		// ServiceAccount to its metrics-reader ClusterRole.
		"--set", "metrics.scrapers[0].namespace="+s.ns, "--set", "metrics.scrapers[0].name=scraper")
	t.Cleanup(func() {
		// Best effort: the cluster is torn down after the test anyway.
		_ = exec.Command(s.helm, "uninstall", s.release, "--namespace", s.ns, "--kubeconfig", s.kubeconfig).Run()
	})
	s.run("kubectl", "-n", s.ns, "create", "serviceaccount", "scraper")
	// The operator's /metrics takes the API server's audience, a pump pod's
	// only its feed's (flightfeed.aero/NS/NAME): one token with all of them,
	// as docs/security.md tells a scraper Secret of one's own to carry.
	scrapeToken = strings.TrimSpace(s.run("kubectl", "-n", s.ns, "create", "token", "scraper", "--duration", "2h",
		"--audience", "https://kubernetes.default.svc.cluster.local",
		"--audience", "flightfeed.aero/"+s.feedNS+"/pek", "--audience", "flightfeed.aero/"+s.feedNS+"/pvg"))
	s.run("kubectl", "create", "namespace", s.feedNS)
	s.waitPods("previous managers", s.operatorPods, 2, nil)
	timing("helm install of the previous release")

	// 2. Two feeds, each pumped by one of the previous release's managers
	// (their Leases in the operator's namespace).
	pek, pvg := s.newFeed("pek"), s.newFeed("pvg")
	feeds := []*feedWorld{pek, pvg}
	var days []string
	for _, f := range feeds {
		s.waitLeader(f, s.ns, 0, waitLong)
		days = append(days, f.WaitRequest(loc, waitLong, clusterPoll))
	}
	timing("two feeds on the previous release, RQFDs sent")

	// 3. A day into both mailboxes, one row every 10 ms; `helm upgrade` to
	// this chart once a third of pek's is processed.
	mon := s.monitorPumps(pek.key, pvg.key)
	base := time.Now().UTC().Truncate(time.Second)
	var rows [][]string
	var fed []<-chan error
	for i, f := range feeds {
		r := workload(days[i], loc)
		rows = append(rows, r)
		_, done := f.feed(r, base, 10*time.Millisecond)
		fed = append(fed, done)
	}
	await.EventuallyEvery(t, "a third of pek's day processed", waitLong, clusterPoll, func() (bool, string) {
		n := pek.Processed()
		return n >= len(rows[0])/3, fmt.Sprintf("%d of %d", n, len(rows[0]))
	})
	upgradeAt := pek.Processed()
	s.helmRun("upgrade", s.release, "charts/flightfeed", "--set", "image.repository=flightfeed", "--set", "image.tag="+tag,
		"--set", "metrics.scrapers[0].namespace="+s.ns, "--set", "metrics.scrapers[0].name=scraper", "--wait", "--timeout", "3m")
	s.optInPlaintext(pek)
	s.optInPlaintext(pvg)
	if upgradeAt >= len(rows[0]) {
		t.Fatalf("pek's day was over before the upgrade (%d of %d)", upgradeAt, len(rows[0]))
	}
	operators := s.waitPods("operator replicas", s.operatorPods, 2, nil)
	for _, p := range operators {
		if got := p.Spec.Containers[0].Image; got != "flightfeed:"+tag {
			t.Errorf("operator pod %s runs %s, want flightfeed:%s", p.Name, got, tag)
		}
	}
	leaders := map[string]string{}
	epochs := map[string]int64{}
	for _, f := range feeds {
		// The new operator rolls the pump Deployment after `helm upgrade
		// --wait` returns: until no pod of the old image is left, the
		// Lease holder read below may be an old pod about to go.
		s.waitPods(f.key.Name+" pump pods of the new image", func() []corev1.Pod {
			pods := s.pumpPods(f.key)
			for _, p := range pods {
				if p.Spec.Containers[0].Image != "flightfeed:"+tag {
					return nil
				}
			}
			return pods
		}, 2, nil)
		leaders[f.key.Name], epochs[f.key.Name] = s.waitLeader(f, s.feedNS, 0, waitLong)
		if !strings.HasPrefix(leaders[f.key.Name], f.key.Name+"-pump-") {
			t.Errorf("%s is led by %q after the upgrade, want one of its pump pods", f.key.Name, leaders[f.key.Name])
		}
	}
	t.Logf("helm upgrade with %d of %d of pek's rows processed; pek led by %s (epoch %d), pvg by %s (epoch %d)",
		upgradeAt, len(rows[0]), leaders["pek"], epochs["pek"], leaders["pvg"], epochs["pvg"])
	for i, f := range feeds {
		if err := <-fed[i]; err != nil {
			t.Fatal(err)
		}
		f.waitDrained(len(rows[i]))
	}
	samples, two := mon.halt()
	if len(two) > 0 {
		t.Errorf("two pumps ran one feed at once (%d of %d samples): %v", len(two), samples, two)
	}
	t.Logf("%d samples of every pod's pumps through the upgrade: never two pumps of one feed", samples)
	timing("helm upgrade mid-day: each feed on its pump pods, drained")
	if out := s.helmRun("test", s.release, "--timeout", "3m"); !strings.Contains(out, "Succeeded") {
		t.Errorf("helm test: no test succeeded:\n%s", out)
	}
	t.Logf("kubectl get pods:\n%s%s", s.run("kubectl", "get", "pods", "-n", s.ns, "-o", "wide"),
		s.run("kubectl", "get", "pods", "-n", s.feedNS, "-o", "wide"))
	for _, f := range feeds {
		s.checkOnePump(f, leaders[f.key.Name])
	}
	timing("helm test; one pump per feed, only its sessions")

	// 4. More of the day; pek's leader pump pod is deleted once a third of
	// it is processed; pvg never pauses.
	mon = s.monitorPumps(pek.key, pvg.key)
	base2 := base.Add(time.Hour)
	var more [][]string
	var inserted []func() int
	fed = fed[:0]
	for i, f := range feeds {
		r := traffic(days[i], loc, 4, 8)
		more = append(more, r)
		n, done := f.feed(r, base2, 10*time.Millisecond)
		inserted, fed = append(inserted, n), append(fed, done)
	}
	pvgProgress := watchProgress(pvg.world, func() int { return len(rows[1]) + inserted[1]() })
	await.EventuallyEvery(t, "a third more of pek's day processed", waitLong, clusterPoll, func() (bool, string) {
		n := pek.Processed() - len(rows[0])
		return n >= len(more[0])/3, fmt.Sprintf("%d of %d", n, len(more[0]))
	})
	standby := ""
	for _, p := range s.pumpPods(pek.key) {
		if p.Name != leaders["pek"] {
			standby = p.Name
		}
	}
	deletedAt := time.Now()
	if err := s.c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: leaders["pek"], Namespace: s.feedNS}}); err != nil {
		t.Fatal(err)
	}
	atDelete := pek.Processed() - len(rows[0])
	if atDelete >= len(more[0]) {
		t.Fatalf("the day was over before the delete (%d of %d)", atDelete, len(more[0]))
	}
	leaseDuration := 15 * time.Second // the chart's lease.duration
	next, epoch := s.waitLeader(pek, s.feedNS, epochs["pek"], time.Until(deletedAt.Add(leaseDuration+10*time.Second)), leaders["pek"])
	takeover := time.Since(deletedAt)
	who := "the standby"
	if next != standby {
		who = "the Deployment's replacement"
	}
	t.Logf("takeover: %s deleted with %d of %d rows processed; %s %s took over after %.1fs (bound %s; epoch %d → %d)",
		leaders["pek"], atDelete, len(more[0]), who, next, takeover.Seconds(), leaseDuration+10*time.Second, epochs["pek"], epoch)
	for i, f := range feeds {
		if err := <-fed[i]; err != nil {
			t.Fatal(err)
		}
		f.waitDrained(len(rows[i]) + len(more[i]))
	}
	stall := pvgProgress.halt()
	if h, ep := s.leaseHolder(s.feedNS, pvg.key), mustEpoch(t, pvg); h != leaders["pvg"] || ep != epochs["pvg"] {
		t.Errorf("pvg changed hands while pek's leader went: %s@%d, was %s@%d", h, ep, leaders["pvg"], epochs["pvg"])
	}
	if stall > 5*time.Second {
		t.Errorf("pvg paused %.1fs with rows waiting while pek's leader pod went", stall.Seconds())
	}
	t.Logf("pvg's longest wait with rows pending while pek's leader went: %.1fs", stall.Seconds())
	samples, two = mon.halt()
	if len(two) > 0 {
		t.Errorf("two pumps ran one feed at once (%d of %d samples): %v", len(two), samples, two)
	}
	timing("pek's leader pod deleted, takeover, both drained")

	// 4b. The rest of pek's day; its new leader's container is SIGKILLed
	// (no release of the Lease, no last status): a new pump takes over
	// within the lease duration + 10 s.
	mon = s.monitorPumps(pek.key)
	base3 := base2.Add(time.Hour)
	last := traffic(days[0], loc, 8, 12)
	_, done := pek.feed(last, base3, 10*time.Millisecond)
	before := len(rows[0]) + len(more[0])
	await.EventuallyEvery(t, "a third of the rest of pek's day processed", waitLong, clusterPoll, func() (bool, string) {
		n := pek.Processed() - before
		return n >= len(last)/3, fmt.Sprintf("%d of %d", n, len(last))
	})
	killed := sigkillPump(t, s, pek.key, next)
	killedAt := time.Now()
	atKill := pek.Processed() - before
	// Whoever comes first: the other pod once the Lease expires, or the
	// killed pod's restarted container, which holds the Lease under the
	// same identity (its pod name) and so takes it back at once; either
	// way a new pump process under a new epoch.
	next2, epoch2 := s.waitLeader(pek, s.feedNS, epoch, time.Until(killedAt.Add(leaseDuration+10*time.Second)))
	who = "the other pod"
	if next2 == next {
		who = "the killed pod's restarted container"
	}
	t.Logf("takeover after SIGKILL: %s's pump (pids %v) killed with %d of %d rows processed; %s %s took over after %.1fs (bound %s; epoch %d → %d)",
		next, killed, atKill, len(last), who, next2, time.Since(killedAt).Seconds(), leaseDuration+10*time.Second, epoch, epoch2)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	pek.waitDrained(before + len(last))
	if samples, two := mon.halt(); len(two) > 0 {
		t.Errorf("two pumps ran pek at once (%d of %d samples): %v", len(two), samples, two)
	}
	timing("pek's leader SIGKILLed, a new pump, drained")

	// The pods' memory, from their cgroups.
	for _, p := range append(s.operatorPods(), append(s.pumpPods(pek.key), s.pumpPods(pvg.key)...)...) {
		if rss, peak, ok := podMemory(p); ok {
			t.Logf("memory: %-40s RSS %6.1f MiB, peak %6.1f MiB", p.Name, rss, peak)
		}
	}

	// 5. Nothing lost: export, ledger and mailbox of each feed equal an
	// uninterrupted run of the same rows; the FlightFeedDays mirror the
	// ledger.
	ledgers := map[string]string{}
	for i, f := range feeds {
		batches := []batch{{rows[i], base}, {more[i], base2}}
		if f == pek {
			batches = append(batches, batch{last, base3})
		}
		ledgers[f.key.Name] = compareWithUninterrupted(t, f, s.binary, batches)
		await.EventuallyEvery(t, f.key.Name+"'s FlightFeedDays equal to the ledger", 60*time.Second, clusterPoll, func() (bool, string) {
			got, want := s.days(f.key), ledgerVersions(t, ledgers[f.key.Name])
			return got == want && want != "", fmt.Sprintf("FlightFeedDays %s, ledger %s", got, want)
		})
	}
	timing("compared with uninterrupted runs")

	// 5b. A person with no Secret reaches pek's read API through the API
	// server's service proxy (the real Service, endpoints and pods):
	// dead, parked, history and verify print what --config prints.
	s.checkOperationsThroughTheAPIServer(pek)
	timing("dead, parked, history and verify through the API server's service proxy")

	// 6. helm uninstall: the operator goes; the CRDs stay (crds.keep), with
	// the FlightFeeds, their FlightFeedDays and the data.
	s.helmRun("uninstall", s.release, "--wait", "--timeout", "2m")
	await.EventuallyEvery(t, "the operator's pods gone", waitLong, clusterPoll, func() (bool, string) {
		p := s.operatorPods()
		return len(p) == 0, fmt.Sprintf("%d pods", len(p))
	})
	for _, name := range []string{"flightfeeds.flightfeed.aero", "flightfeeddays.flightfeed.aero"} {
		if err := s.c.Get(t.Context(), types.NamespacedName{Name: name}, &crd); err != nil {
			t.Errorf("CRD %s after helm uninstall: %v", name, err)
		}
	}
	for _, f := range feeds {
		var ff v1alpha1.FlightFeed
		if err := s.c.Get(t.Context(), f.key, &ff); err != nil {
			t.Errorf("FlightFeed %s after helm uninstall: %v", f.key, err)
		}
		if got, want := s.days(f.key), ledgerVersions(t, ledgers[f.key.Name]); got != want {
			t.Errorf("%s's FlightFeedDays after helm uninstall: %s, want %s", f.key.Name, got, want)
		}
		if got := f.Run("ledger"); got != ledgers[f.key.Name] {
			t.Errorf("%s's ledger after helm uninstall:\n%s\nwant\n%s", f.key.Name, got, ledgers[f.key.Name])
		}
	}
	timing("helm uninstall kept the CRDs, the FlightFeeds and the data")
}

func mustEpoch(t *testing.T, f *feedWorld) int64 {
	t.Helper()
	_, ep, err := f.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// days lists the feed's FlightFeedDays as "day=version ..." in day order.
func (s *suite) days(key types.NamespacedName) string {
	var l v1alpha1.FlightFeedDayList
	if err := s.c.List(context.Background(), &l, client.InNamespace(key.Namespace),
		client.MatchingLabels{"flightfeed.aero/feed": key.Name}); err != nil {
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

// checkOperationsThroughTheAPIServer runs `flightfeed dead`, `parked`,
// `history` and `verify` with --feed as a person (the admin kubeconfig
// impersonating a user) who may get the FlightFeed, use services/proxy of
// the feed's pump Service and make tokens for the ServiceAccount ops,
// which is bound to the chart's operations ClusterRole and a Role granting
// get flightfeeds/flights: nothing else, no Secret. Their output equals
// the database's (--config); history and verify are logged as transcripts.
func (s *suite) checkOperationsThroughTheAPIServer(f *feedWorld) {
	t := s.t
	ctx := t.Context()
	ns := f.key.Namespace
	person := "ffc-ops-person"
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ops", Namespace: ns}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ops", Namespace: ns},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "ops"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: s.release + "-flightfeed-operations"}},
		// The chart's operations role covers dead, parked, replays and
		// verifications; a flight's history is read with the flights'
		// permission, which the chart leaves to each site's own Role.
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ops-flights", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds/flights"}, Verbs: []string{"get"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ops-flights", Namespace: ns},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "ops"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "ops-flights"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: person, Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds"}, Verbs: []string{"get"}},
			// The proxy's name is the URL's, scheme and port included.
			{APIGroups: []string{""}, Resources: []string{"services/proxy"}, ResourceNames: []string{"https:" + feednames.Pump(f.key.Name) + ":" + feednames.APIPort}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{"ops"}, Verbs: []string{"create"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: person, Namespace: ns},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: person}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: person}},
	} {
		if err := s.c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate.UserName = person
	kubeconfig := filepath.Join(t.TempDir(), "person.kubeconfig")
	if err := kubetest.WriteKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := kubetest.Client(t, cfg).Get(ctx, types.NamespacedName{Namespace: ns, Name: f.key.Name + "-db"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the person reads the feed's database Secret: %v", err)
	}
	// A day of the ledger and a flight of it: its history, and the day
	// verified in a pump pod (the rebuild runs there), print what the
	// database says (--config) and what a workstation's verify prints.
	day, flid := ledgerDayAndFlight(t, f)
	for _, args := range [][]string{{"dead", "-o", "json"}, {"dead"}, {"parked"}, {"history", flid}, {"verify", "--day", day}} {
		want := f.Run(args[0], args[1:]...)
		if args[0] == "history" || args[0] == "verify" {
			t.Logf("%s (--config):\n%s", strings.Join(args, " "), want)
		}
		var got string
		await.EventuallyEvery(t, strings.Join(args, " ")+" through the service proxy", waitLong, clusterPoll, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, s.binary, append(args, "--feed", f.key.String(), "--kubeconfig", kubeconfig, "--service-account", "ops")...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			got = string(out)
			return err == nil, fmt.Sprintf("%v: %s", err, stderr.String())
		})
		if got != want {
			t.Errorf("%v through the service proxy:\n%s\nfrom the database:\n%s", args, got, want)
		}
	}
}

// ledgerDayAndFlight is the first day of f's ledger and the first flight
// of that day.
func ledgerDayAndFlight(t *testing.T, f *feedWorld) (day, flid string) {
	t.Helper()
	var d struct {
		Day string `json:"day"`
	}
	first, _, _ := strings.Cut(f.Run("ledger"), "\n")
	if err := json.Unmarshal([]byte(first), &d); err != nil || d.Day == "" {
		t.Fatalf("ledger of %s: %q (%v)", f.key, first, err)
	}
	var fl struct {
		FLID json.RawMessage `json:"FLID"`
	}
	first, _, _ = strings.Cut(f.Run("export", "--day", d.Day), "\n")
	if err := json.Unmarshal([]byte(first), &fl); err != nil || len(fl.FLID) == 0 {
		t.Fatalf("export of %s %s: %q (%v)", f.key, d.Day, first, err)
	}
	return d.Day, strings.Trim(string(fl.FLID), `"`)
}
