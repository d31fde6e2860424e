package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the mailbox driver
	"github.com/jackc/pgx/v5/pgxpool"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
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
	c := kubetest.Client(t, restCfg)
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
	m := &manager{t: e.t, id: "operator", probe: loopback.FreeAddr(e.t), out: &proctest.Output{}, done: make(chan struct{})}
	m.cmd = exec.Command(binary, "manager",
		"--kubeconfig", kubeconfig,
		"--namespaces", e.ns,
		"--namespace", e.ns,
		"--pump-image", "flightfeed:e2e",
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", m.probe,
	)
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var sink io.Writer = m.out
	if os.Getenv("FLIGHTFEED_TEST_LOG") != "" {
		sink = io.MultiWriter(m.out, proctest.Prefixed("operator "))
	}
	m.cmd.Stdout, m.cmd.Stderr = sink, sink
	if err := m.cmd.Start(); err != nil {
		e.t.Fatalf("start the operator: %v", err)
	}
	go func() {
		_ = m.cmd.Wait()
		close(m.done)
	}()
	e.t.Cleanup(m.shutdown)
	await.Eventually(e.t, "the operator to be ready", waitLong, func() (bool, string) {
		select {
		case <-m.done:
			e.t.Fatalf("the operator exited: %s\n%s", m.cmd.ProcessState, proctest.Tail(m.out.String(), 40))
		default:
		}
		code, body := httpGet("http://" + m.probe + "/readyz")
		return code == http.StatusOK, fmt.Sprint(code, " ", body)
	})
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
// kfake broker, with the --config file naming them.
type feedWorld struct {
	t       *testing.T
	name    string
	pgDSN   string
	mboxDSN string
	brokers []string
	config  string
	pool    *pgxpool.Pool
	mbox    *sql.DB
	loc     *time.Location
}

// newWorld creates the services and migrates the database with the
// binary (`flightfeed migrate`), then installs the write audit.
func newWorld(t *testing.T, name string) *feedWorld {
	t.Helper()
	w := &feedWorld{t: t, name: name, pgDSN: pgtest.New(t), mboxDSN: mailboxtest.NewMailbox(t),
		brokers: kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")}
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	w.loc = loc
	w.config = w.feed().WriteConfig(t, name)
	w.run("migrate")
	w.pool, err = pgxpool.New(t.Context(), w.pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.pool.Close)
	w.mbox, err = sql.Open("mysql", w.mboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.mbox.Close() })
	w.installAudit()
	return w
}

// feed is the SPEC §4 feed (the request horizon narrowed to today, so
// that the pump asks for one day) on this world's services.
func (w *feedWorld) feed() feedtest.Feed {
	return feedtest.Feed{MailboxDSN: w.mboxDSN, DatabaseDSN: w.pgDSN, Brokers: w.brokers}
}

// run runs the binary's command on this feed's --config and returns its
// standard output.
func (w *feedWorld) run(command string, args ...string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{command, "--config", w.config}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("flightfeed %s --config %s: %v\n%s", command, w.config, err, proctest.Tail(stderr.String(), 40))
	}
	return string(out)
}

// apply creates the feed's Secrets and its FlightFeed in e's namespace.
func (e *env) apply(w *feedWorld) types.NamespacedName {
	e.t.Helper()
	e.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Name: w.name + "-mailbox", Namespace: e.ns},
		StringData: map[string]string{"dsn": w.mboxDSN}})
	e.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Name: w.name + "-db", Namespace: e.ns},
		StringData: map[string]string{"dsn": w.pgDSN}})
	doc := w.feed().Manifest(w.name, e.ns)
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		e.t.Fatal(err)
	}
	e.create(&obj)
	return types.NamespacedName{Namespace: e.ns, Name: w.name}
}

// lock reads pipeline_lock: the writer the database lets commit.
func (w *feedWorld) lock(ctx context.Context) (holder string, epoch int64, err error) {
	var h *string
	err = w.pool.QueryRow(ctx, `SELECT holder, epoch FROM pipeline_lock WHERE name = $1`, store.LockName).Scan(&h, &epoch)
	return ptr.Deref(h, ""), epoch, err
}

func (w *feedWorld) pgCount(query string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(w.t.Context(), query, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (w *feedWorld) mboxCount(query string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.mbox.QueryRowContext(w.t.Context(), query, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// processed counts mailbox rows that carry their result.
func (w *feedWorld) processed() int {
	w.t.Helper()
	return w.mboxCount(`SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`)
}

// put inserts rows[from:to] as the AODB would, row i received at base + i ms
// (the same for every run fed with the same rows).
func (w *feedWorld) put(rows []string, base time.Time, from, to int) {
	w.t.Helper()
	for i := from; i < to; i++ {
		if err := w.insert(rows[i], base.Add(time.Duration(i)*time.Millisecond)); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *feedWorld) insert(body string, received time.Time) error {
	_, err := mailbox.WriteInbound(context.Background(), w.mbox, mailbox.Inbound{Received: received, Body: body})
	if err != nil {
		return fmt.Errorf("insert mailbox row: %w", err)
	}
	return nil
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
			err := w.insert(rows[i], base.Add(time.Duration(i)*time.Millisecond))
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

var rqfdDay = regexp.MustCompile(`<STDB>(\d{2}[A-Za-z]{3}\d{2})0000</STDB>`)

// waitRequest waits for the pump's first full-day request in COUTMSGS and
// returns the day it asks for.
func (w *feedWorld) waitRequest() string {
	w.t.Helper()
	var day string
	await.Eventually(w.t, w.name+": the pump's RQFD in COUTMSGS", waitLong, func() (bool, string) {
		var body string
		err := w.mbox.QueryRowContext(w.t.Context(),
			`SELECT COUTMSGS_CLOB_MSG FROM COUTMSGS WHERE COUTMSGS_CLOB_MSG LIKE '%<TYPE>RQFD</TYPE>%' ORDER BY COUTMSGS_ID LIMIT 1`).Scan(&body)
		if err != nil {
			return false, err.Error()
		}
		m := rqfdDay.FindStringSubmatch(body)
		if m == nil {
			return false, "a request without a day start: " + body
		}
		d, err := time.ParseInLocation("02Jan06", m[1], w.loc)
		if err != nil {
			return false, err.Error()
		}
		day = d.Format(time.DateOnly)
		return true, ""
	})
	return day
}

// waitDrained waits until all n mailbox rows carry a result and every
// outbox event is delivered.
func (w *feedWorld) waitDrained(n int) {
	w.t.Helper()
	await.Eventually(w.t, fmt.Sprintf("%s: all %d mailbox rows processed and the outbox delivered", w.name, n), waitLong, func() (bool, string) {
		p := w.processed()
		pending := w.pgCount(`SELECT COUNT(*) FROM msg_event_record WHERE id > (SELECT delivered_id FROM msg_event_cursor) AND (id, kind) NOT IN (SELECT event_id, kind FROM msg_event_parked)`)
		return p == n && pending == 0, fmt.Sprintf("%d of %d rows processed, %d events pending", p, n, pending)
	})
}

// mailboxDump lists every row's result, for comparing runs.
func (w *feedWorld) mailboxDump() string { return mailboxtest.Results(w.t, w.mbox) }

// results counts the mailbox rows by result.
func (w *feedWorld) results() map[string]int {
	w.t.Helper()
	rows, err := w.mbox.QueryContext(w.t.Context(), `SELECT coalesce(CMINMSGS_PROC_RESULT, ''), COUNT(*) FROM CMINMSGS GROUP BY 1`)
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
// application_name, see startManager) inside a transaction on the feed's
// database.
func (w *feedWorld) openTransactions(identity string) int {
	w.t.Helper()
	return w.pgCount(`SELECT COUNT(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND xact_start IS NOT NULL`, identity)
}

// ---- the write audit ---------------------------------------------------------

// installAudit adds triggers (test-owned, beside the product's schema) that
// record, inside every transaction writing the pump's tables, which process
// wrote (its application_name: the manager's identity, see startManager)
// and what pipeline_lock said at that moment. The audit row commits if and
// only if the pump's transaction commits, so the table is the list of
// committed fenced writes and who made them.
//
// The pump's transactions lock pipeline_lock first and check their epoch,
// so the holder the trigger reads is the writer itself — unless fencing
// failed: a paused ex-holder that committed after another replica took a
// newer epoch would be recorded with app ≠ holder.
func (w *feedWorld) installAudit() {
	w.t.Helper()
	stmts := []string{
		`CREATE TABLE e2e_write_audit (
			id         bigserial   PRIMARY KEY,
			tbl        text        NOT NULL,
			message_id bigint,
			app        text        NOT NULL,
			holder     text        NOT NULL,
			epoch      bigint      NOT NULL,
			at         timestamptz NOT NULL DEFAULT clock_timestamp())`,
		`CREATE FUNCTION e2e_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO e2e_write_audit (tbl, message_id, app, holder, epoch)
			SELECT TG_TABLE_NAME, NEW.message_id, current_setting('application_name'), coalesce(holder, ''), epoch
			FROM pipeline_lock WHERE name = 'FLIGHT_SCHD_WRITER';
			RETURN NULL;
		END $$`,
		`CREATE FUNCTION e2e_audit_statement() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO e2e_write_audit (tbl, app, holder, epoch)
			SELECT TG_TABLE_NAME, current_setting('application_name'), coalesce(holder, ''), epoch
			FROM pipeline_lock WHERE name = 'FLIGHT_SCHD_WRITER';
			RETURN NULL;
		END $$`,
		// proc_state: one row per message, written only in fenced
		// transactions; the state, ledger and outbox tables per statement.
		// (The dispatcher's delivery marks, request bookkeeping and backfill
		// clean-up are not fenced writes and are not audited.)
		`CREATE TRIGGER e2e_audit AFTER INSERT OR UPDATE ON proc_state FOR EACH ROW EXECUTE FUNCTION e2e_audit_row()`,
		`CREATE TRIGGER e2e_audit AFTER INSERT OR UPDATE OR DELETE ON flight_schd FOR EACH STATEMENT EXECUTE FUNCTION e2e_audit_statement()`,
		`CREATE TRIGGER e2e_audit AFTER INSERT OR UPDATE OR DELETE ON schd_gen FOR EACH STATEMENT EXECUTE FUNCTION e2e_audit_statement()`,
		`CREATE TRIGGER e2e_audit AFTER INSERT ON msg_event FOR EACH STATEMENT EXECUTE FUNCTION e2e_audit_statement()`,
		`CREATE TRIGGER e2e_audit AFTER INSERT ON backfill_todo FOR EACH STATEMENT EXECUTE FUNCTION e2e_audit_statement()`,
	}
	for _, s := range stmts {
		if _, err := w.pool.Exec(w.t.Context(), s); err != nil {
			w.t.Fatalf("install the write audit: %v\n%s", err, s)
		}
	}
}

// auditRow is one audited write.
type auditRow struct {
	ID        int64
	Table     string
	MessageID int64
	App       string
	Holder    string
	Epoch     int64
}

func (a auditRow) String() string {
	return fmt.Sprintf("#%d %s msg=%d by %s, pipeline_lock %s@%d", a.ID, a.Table, a.MessageID, a.App, a.Holder, a.Epoch)
}

func (w *feedWorld) audit() []auditRow {
	w.t.Helper()
	rows, err := w.pool.Query(w.t.Context(), `SELECT id, tbl, coalesce(message_id, 0), app, holder, epoch FROM e2e_write_audit ORDER BY id`)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var a auditRow
		if err := rows.Scan(&a.ID, &a.Table, &a.MessageID, &a.App, &a.Holder, &a.Epoch); err != nil {
			w.t.Fatal(err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// checkAudit asserts that every committed fenced write was made by the
// process pipeline_lock named as the writer in that very transaction, and
// that something was written at all.
func (w *feedWorld) checkAudit() []auditRow {
	w.t.Helper()
	rows := w.audit()
	if len(rows) == 0 {
		w.t.Fatalf("%s: no audited write: the pump never committed", w.name)
	}
	for _, a := range rows {
		if a.App != a.Holder {
			w.t.Errorf("%s: a write committed by %s while pipeline_lock named %s: %s", w.name, a.App, a.Holder, a)
		}
	}
	return rows
}

// ---- manager processes -------------------------------------------------------

// manager is one flightfeed process: a pump pod (`flightfeed pump --feed`,
// startPump) or the operator (`flightfeed manager`, startOperator).
type manager struct {
	t       *testing.T
	id      string
	cmd     *exec.Cmd
	metrics string
	probe   string
	out     *proctest.Output
	done    chan struct{}

	mu     sync.Mutex
	frozen bool
}

// startPump runs `flightfeed pump --feed NS/FEED --kubeconfig K` as
// identity against the shared control plane: one of the feed's pump pods,
// as the operator's Deployment would run it. PGAPPNAME makes the
// process's PostgreSQL sessions carry its identity as application_name
// (pgx reads it from the environment), which is how the write audit and
// pg_stat_activity tell the pods apart.
// extra flags come last, so they override the harness's.
func (e *env) startPump(identity, feed string, lt leaseTimings, extra ...string) *manager {
	e.t.Helper()
	return e.startPumpIn("", identity, feed, lt, extra...)
}

// startPumpIn is startPump inside memory cgroup cg (proctest.MemoryCgroup),
// as a pod under its memory limit; "" is no cgroup.
func (e *env) startPumpIn(cg, identity, feed string, lt leaseTimings, extra ...string) *manager {
	e.t.Helper()
	m := &manager{t: e.t, id: identity, metrics: loopback.FreeAddr(e.t), probe: loopback.FreeAddr(e.t), out: &proctest.Output{}, done: make(chan struct{})}
	m.cmd = exec.Command(binary, "pump",
		"--feed", e.ns+"/"+feed,
		"--kubeconfig", kubeconfig,
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
		"--health-probe-bind-address", m.probe,
		"--api-bind-address", "0",
	)
	m.cmd.Args = append(m.cmd.Args, extra...)
	if cg != "" {
		argv := proctest.InCgroup(cg, m.cmd.Args...)
		m.cmd = exec.Command(argv[0], argv[1:]...)
	}
	m.cmd.Env = append(os.Environ(), "PGAPPNAME="+identity, "KUBECONFIG="+kubeconfig)
	if cg != "" {
		// The binary sets its soft memory limit from the cgroup's, as in a pod.
		m.cmd.Env = proctest.WithoutEnv(m.cmd.Env, "GOMEMLIMIT")
	}
	var sink io.Writer = m.out
	if os.Getenv("FLIGHTFEED_TEST_LOG") != "" {
		sink = io.MultiWriter(m.out, proctest.Prefixed(identity+" "))
	}
	m.cmd.Stdout, m.cmd.Stderr = sink, sink
	if err := m.cmd.Start(); err != nil {
		e.t.Fatalf("start pump %s: %v", identity, err)
	}
	go func() {
		_ = m.cmd.Wait()
		close(m.done)
	}()
	e.t.Cleanup(m.shutdown)
	await.Eventually(e.t, identity+" to be ready", waitLong, func() (bool, string) {
		select {
		case <-m.done:
			e.t.Fatalf("%s exited: %s\n%s", identity, m.cmd.ProcessState, proctest.Tail(m.out.String(), 40))
		default:
		}
		code, body := httpGet("http://" + m.probe + "/readyz")
		return code == http.StatusOK, fmt.Sprint(code, " ", body)
	})
	return m
}

// kill ends the process with SIGKILL (no clean-up: its Leases stay held
// until they expire, its connections drop) and waits for it.
func (m *manager) kill() {
	m.t.Helper()
	m.signal(syscall.SIGKILL)
	m.mu.Lock()
	m.frozen = false
	m.mu.Unlock()
	m.wait(waitLong)
}

// freeze stops the process (SIGSTOP) and waits until every thread of it
// is stopped: from then on it does nothing, not even renew its Leases.
func (m *manager) freeze() {
	m.t.Helper()
	m.mu.Lock()
	m.frozen = true
	m.mu.Unlock()
	m.signal(syscall.SIGSTOP)
	await.Eventually(m.t, m.id+" to be stopped", waitLong, func() (bool, string) {
		states, err := threadStates(m.cmd.Process.Pid)
		if err != nil {
			return false, err.Error()
		}
		return strings.Trim(states, "tT") == "", "thread states " + states
	})
}

// thaw resumes a frozen process (SIGCONT).
func (m *manager) thaw() {
	m.t.Helper()
	m.signal(syscall.SIGCONT)
	m.mu.Lock()
	m.frozen = false
	m.mu.Unlock()
}

func (m *manager) signal(sig syscall.Signal) {
	m.t.Helper()
	if err := m.cmd.Process.Signal(sig); err != nil {
		m.t.Fatalf("signal %s to %s: %v", sig, m.id, err)
	}
}

func (m *manager) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

func (m *manager) wait(d time.Duration) bool {
	select {
	case <-m.done:
		return true
	case <-time.After(d):
		return false
	}
}

// shutdown stops the process the way Kubernetes does (SIGTERM, then
// SIGKILL after a grace period); on a failed test it shows the logs.
func (m *manager) shutdown() {
	if !m.exited() {
		m.mu.Lock()
		frozen := m.frozen
		m.mu.Unlock()
		if frozen {
			_ = m.cmd.Process.Signal(syscall.SIGCONT)
		}
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		if !m.wait(30 * time.Second) {
			m.t.Errorf("%s did not stop on SIGTERM", m.id)
			_ = m.cmd.Process.Kill()
			m.wait(waitLong)
		}
	}
	if m.t.Failed() {
		m.t.Logf("--- logs of %s (last lines)\n%s", m.id, proctest.Tail(m.out.String(), 150))
	}
}

// metric scrapes the process's /metrics for the series name of feed key;
// ok is false when the process does not answer or has no such series.
func (m *manager) metric(name string, key types.NamespacedName) (value float64, ok bool) {
	code, body := httpGet("http://" + m.metrics + "/metrics")
	if code != http.StatusOK {
		return 0, false
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, `feed="`+key.Name+`"`) ||
			!strings.Contains(line, `feed_namespace="`+key.Namespace+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		return v, err == nil
	}
	return 0, false
}

// pumpRunning is the process's flightfeed_pump_running for key (0 when
// absent, -1 when the process does not answer).
func (m *manager) pumpRunning(key types.NamespacedName) float64 {
	code, _ := httpGet("http://" + m.metrics + "/metrics")
	if code != http.StatusOK {
		return -1
	}
	v, _ := m.metric("flightfeed_pump_running", key)
	return v
}

// logs is everything the process wrote so far.
func (m *manager) logs() string { return m.out.String() }

// threadStates is the scheduler state letter of every thread of pid.
func threadStates(pid int) (string, error) {
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil {
		return "", fmt.Errorf("threads of %d: %w", pid, err)
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("no threads of %d", pid)
	}
	var b strings.Builder
	for _, f := range dirs {
		raw, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		// "pid (comm) S ...": the state follows the last ')'.
		s := string(raw)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) {
			return "", fmt.Errorf("%s: %q", f, s)
		}
		b.WriteByte(s[i+2])
	}
	return b.String(), nil
}

// ---- Kubernetes reads ------------------------------------------------------------

// leaseHolder is the holder of the feed's Lease ("" while free or absent).
func (e *env) leaseHolder(ctx context.Context, key types.NamespacedName) (string, error) {
	var l coordinationv1.Lease
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: pumppod.FeedLeaseName(key)}, &l); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), nil
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
		if ph, epoch, err = w.lock(e.t.Context()); err != nil {
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

// ---- helpers --------------------------------------------------------------------

var httpClient = &http.Client{Timeout: time.Second}

// httpGet returns the status and body of url, 0 and the error when the
// server does not answer (a killed or frozen process).
func httpGet(url string) (int, string) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}

// versionField strips what differs between two runs of the same input:
// state versions (a rolled-back transaction still consumes sequence
// values) and commit times.
var versionField = regexp.MustCompile(`"STATE_VERSION":\d+,?|"UPDATED_AT":"[^"]*",?`)
