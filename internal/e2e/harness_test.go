package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the mailbox driver
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// leaseTimings are a manager's --lease-duration, --renew-deadline and
// --retry-period.
type leaseTimings struct {
	duration, renew, retry time.Duration
}

// fastLease makes takeovers quick: a holder that is gone is replaced
// after about three seconds.
var fastLease = leaseTimings{duration: 3 * time.Second, renew: 2 * time.Second, retry: 500 * time.Millisecond}

// waitLong bounds every wait that has no tighter bound of its own. Waits
// are polls with deadlines, never assertions on how long something took.
const waitLong = 60 * time.Second

// env is one test's namespace on the shared control plane.
type env struct {
	t  *testing.T
	c  client.Client
	ns string
	// operator is the `flightfeed manager` process of the namespace.
	operator *manager
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := kubetest.Client(t, shared.RestConfig)
	ns := "e2e-" + strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(strings.TrimPrefix(t.Name(), "Test"), "-"))
	if len(ns) > 50 {
		ns = strings.TrimRight(ns[:50], "-")
	}
	ns += "-" + utilrand.String(5)
	e := &env{t: t, c: c, ns: ns}
	e.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	e.operator = e.startOperator()
	return e
}

// startOperator runs `flightfeed manager`, the control plane, watching
// e's namespace: it makes each feed's pump objects (envtest runs no pods:
// the tests start the pods' processes themselves, startPump).
func (e *env) startOperator() *manager {
	e.t.Helper()
	probe := loopback.FreeAddr(e.t)
	m := &manager{id: "operator"}
	m.Proc = proctest.Start(e.t, shared.Binary, proctest.Spec{ID: "operator", Env: []string{"KUBECONFIG=" + shared.Kubeconfig}, Args: []string{"manager",
		"--kubeconfig", shared.Kubeconfig,
		"--namespaces", e.ns,
		"--namespace", e.ns,
		"--pump-image", "flightfeed:e2e",
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", probe,
	}})
	m.WaitReady(probe)
	return m
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	if err := e.c.Create(e.t.Context(), obj); err != nil {
		e.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// ---- one feed's services ---------------------------------------------------

// feedWorld is one feed's own PostgreSQL database, MariaDB mailbox and
// kfake broker, with the --config file naming them (proctest.World).
type feedWorld struct {
	*proctest.World
	t   *testing.T
	loc *time.Location
}

// newWorld creates the services and migrates the database with the
// binary (`flightfeed migrate`), then installs the write audit.
func newWorld(t *testing.T, name string) *feedWorld {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	w := &feedWorld{World: proctest.NewWorld(t, name, shared.Binary, proctest.WorldOptions{}), t: t, loc: loc}
	w.Migrate()
	w.InstallAudit()
	return w
}

// apply creates the feed's Secrets and its FlightFeed (the example feed of docs/first-feed.md,
// the request horizon narrowed to today) in e's namespace.
func (e *env) apply(w *feedWorld) types.NamespacedName {
	e.t.Helper()
	return proctest.ApplyFeed(e.t, e.c, e.ns, w.Name, feedtest.Feed{MailboxDSN: w.MailboxDSN, DatabaseDSN: w.DatabaseDSN, Brokers: w.Brokers})
}

// put inserts rows[from:to] as the AODB would, row i received at base + i ms
// (the same for every run fed with the same rows).
func (w *feedWorld) put(rows []string, base time.Time, from, to int) {
	w.t.Helper()
	for i := from; i < to; i++ {
		if err := w.Insert(rows[i], base.Add(time.Duration(i)*time.Millisecond)); err != nil {
			w.t.Fatal(err)
		}
	}
}

// feeder inserts rows[from:to] one every pace in the background; inserted
// reports how many are in, wait waits for the end.
type feeder struct {
	mu       sync.Mutex
	inserted int
	err      error
	done     chan struct{}
}

func (w *feedWorld) startFeeder(rows []string, base time.Time, from, to int, pace time.Duration) *feeder {
	f := &feeder{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for i := from; i < to; i++ {
			err := w.Insert(rows[i], base.Add(time.Duration(i)*time.Millisecond))
			f.mu.Lock()
			f.err = err
			if err == nil {
				f.inserted++
			}
			f.mu.Unlock()
			if err != nil {
				return
			}
			time.Sleep(pace)
		}
	}()
	return f
}

func (f *feeder) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inserted
}

func (f *feeder) wait(t *testing.T) {
	t.Helper()
	select {
	case <-f.done:
	case <-time.After(waitLong):
		t.Fatal("the feeder did not finish")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		t.Fatal(f.err)
	}
}

// waitRequest waits for the pump's first full-day request in COUTMSGS and
// returns the day it asks for.
func (w *feedWorld) waitRequest() string {
	w.t.Helper()
	return w.WaitRequest(w.loc, waitLong, proctest.Poll)
}

// waitDrained waits until all n mailbox rows carry a result and every
// outbox event is delivered.
func (w *feedWorld) waitDrained(n int) {
	w.t.Helper()
	w.WaitDrained(n, waitLong, proctest.Poll)
}

// results counts the mailbox rows by result.
func (w *feedWorld) results() map[string]int {
	w.t.Helper()
	rows, err := w.Mailbox.QueryContext(w.t.Context(), `SELECT coalesce(CMINMSGS_PROC_RESULT, ''), COUNT(*) FROM CMINMSGS GROUP BY 1`)
	if err != nil {
		w.t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	out := map[string]int{}
	for rows.Next() {
		var result string
		var n int
		if err := rows.Scan(&result, &n); err != nil {
			w.t.Fatal(err)
		}
		out[result] = n
	}
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// openTransactions counts the sessions of process identity (its
// application_name, see startPump) inside a transaction on the feed's
// database.
func (w *feedWorld) openTransactions(identity string) int {
	w.t.Helper()
	return w.Count(`SELECT COUNT(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND xact_start IS NOT NULL`, identity)
}

// checkAudit asserts that every committed fenced write was made by the
// process pipeline_lock named as the writer in that very transaction
// (proctest.World.Audit), and that something was written at all.
func (w *feedWorld) checkAudit() []proctest.Write {
	w.t.Helper()
	rows := w.Audit()
	if len(rows) == 0 {
		w.t.Fatalf("%s: no audited write: the pump never committed", w.Name)
	}
	return rows
}

// ---- manager processes -------------------------------------------------------

// manager is one flightfeed process: a pump pod (`flightfeed pump --feed`,
// startPump) or the operator (`flightfeed manager`, startOperator).
type manager struct {
	*proctest.Proc
	id      string
	metrics string
}

// startPump runs `flightfeed pump --feed NS/FEED --kubeconfig K` as
// identity against the shared control plane: one of the feed's pump pods,
// as the operator's Deployment would run it. Its PostgreSQL sessions
// carry its identity as application_name (proctest.Spec.ID), which is
// how the write audit and pg_stat_activity tell the pods apart.
// extra flags come last, so they override the harness's.
func (e *env) startPump(identity, feed string, lt leaseTimings, extra ...string) *manager {
	e.t.Helper()
	return e.startPumpIn("", identity, feed, lt, extra...)
}

// startPumpIn is startPump inside memory cgroup cg (proctest.MemoryCgroup),
// as a pod under its memory limit; "" is no cgroup.
func (e *env) startPumpIn(cg, identity, feed string, lt leaseTimings, extra ...string) *manager {
	e.t.Helper()
	m := &manager{id: identity, metrics: loopback.FreeAddr(e.t)}
	probe := loopback.FreeAddr(e.t)
	args := []string{"pump",
		"--feed", e.ns + "/" + feed,
		"--kubeconfig", shared.Kubeconfig,
		"--identity", identity,
		"--lease-duration", lt.duration.String(),
		"--renew-deadline", lt.renew.String(),
		"--retry-period", lt.retry.String(),
		"--status-interval", "1s",
		// Nothing watches Secrets: a rotation is seen at the next resync.
		"--secret-resync-period", "1s",
		"--metrics-bind-address", m.metrics,
		// Plain HTTP: the harness scrapes as a local run would.
		"--metrics-secure=false",
		"--health-probe-bind-address", probe,
		"--api-bind-address", "0",
	}
	m.Proc = proctest.Start(e.t, shared.Binary, proctest.Spec{ID: identity, Args: append(args, extra...),
		Env: []string{"KUBECONFIG=" + shared.Kubeconfig}, Cgroup: cg})
	m.WaitReady(probe)
	return m
}

// metric scrapes the process's /metrics for the series name of feed key;
// ok is false when the process does not answer or has no such series.
func (m *manager) metric(name string, key types.NamespacedName) (value float64, ok bool) {
	code, body := proctest.HTTPGet(nil, "http://"+m.metrics+"/metrics")
	if code != http.StatusOK {
		return 0, false
	}
	return proctest.FeedMetric(body, name, key.Namespace, key.Name)
}

// pumpRunning is the process's flightfeed_pump_running for key (0 when
// absent, -1 when the process does not answer).
func (m *manager) pumpRunning(key types.NamespacedName) float64 {
	code, body := proctest.HTTPGet(nil, "http://"+m.metrics+"/metrics")
	if code != http.StatusOK {
		return -1
	}
	v, _ := proctest.FeedMetric(body, "flightfeed_pump_running", key.Namespace, key.Name)
	return v
}

// ---- Kubernetes reads ------------------------------------------------------------

// leaseHolder is the holder of the feed's Lease ("" while free or absent).
func (e *env) leaseHolder(ctx context.Context, key types.NamespacedName) (string, error) {
	return proctest.LeaseHolder(ctx, e.c, e.ns, pumppod.FeedLeaseName(key))
}

// waitLeader waits until the feed's Lease has a holder whose pump took the
// writer lock, and returns the holder and its epoch.
func (e *env) waitLeader(key types.NamespacedName, w *feedWorld) (string, int64) {
	e.t.Helper()
	var holder string
	var epoch int64
	await.Eventually(e.t, key.Name+": a Lease holder that holds pipeline_lock", waitLong, func() (bool, string) {
		lh, err := e.leaseHolder(e.t.Context(), key)
		if err != nil {
			return false, err.Error()
		}
		var ph string
		if ph, epoch, err = w.Lock(e.t.Context()); err != nil {
			return false, err.Error()
		}
		holder = lh
		return lh != "" && lh == ph && epoch > 0, fmt.Sprintf("Lease held by %q, pipeline_lock by %q at epoch %d", lh, ph, epoch)
	})
	return holder, epoch
}

// waitReady waits until the FlightFeed is Ready with holder running its pump.
func (e *env) waitReady(key types.NamespacedName, holder string) *v1alpha1.FlightFeed {
	e.t.Helper()
	var ff v1alpha1.FlightFeed
	await.Eventually(e.t, fmt.Sprintf("%s Ready with %s's pump", key.Name, holder), waitLong, func() (bool, string) {
		if err := e.c.Get(e.t.Context(), key, &ff); err != nil {
			return false, err.Error()
		}
		ready := false
		for _, c := range ff.Status.Conditions {
			if c.Type == string(v1alpha1.ConditionReady) {
				ready = c.Status == metav1.ConditionTrue && c.ObservedGeneration == ff.Generation
			}
		}
		return ready && ff.Status.Pump != nil && ff.Status.Pump.Holder == holder,
			fmt.Sprintf("conditions %+v pump %+v", ff.Status.Conditions, ff.Status.Pump)
	})
	return &ff
}

// ---- the workload -----------------------------------------------------------------

// workload is the AODB's side of a day: the RESP answering the full-day
// request (row 1), then four rounds of the day's traffic (window pushes,
// a FLOP of every kind, ADFT, FDEL, malformed rows) from `flightfeed
// simulate`'s generator, with fixed seeds: the same rows for every run.
func workload(day string, loc *time.Location) []string { return proctest.Workload(day, loc, 30, 4) }
