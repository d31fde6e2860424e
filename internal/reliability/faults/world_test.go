//go:build reliability

package faults_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/faultproxy"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// ModeEnv selects the mode: "full" strikes more often per scenario.
const ModeEnv = "FLIGHTFEED_RELIABILITY"

func full() bool { return os.Getenv(ModeEnv) == "full" }

// waitLong bounds every wait without a tighter bound of its own. Waits
// are polls with deadlines, never assertions on how long something took.
const waitLong = 2 * time.Minute

// poll is how often the waits look.
const poll = 25 * time.Millisecond

// pumpOptions is the pump section of every feed: short backoffs only keep
// the retries after a fault quick (they change no result).
const pumpOptions = "backoffInitial: 50ms, backoffMax: 1s"

// ---- the binary and the reference run ------------------------------------------

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string

	refOnce sync.Once
	ref     check.Outcome
	refErr  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// flightfeed builds the binary once for the package.
func flightfeed(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "flightfeed-reliability-faults-"); buildErr != nil {
			return
		}
		binPath, buildErr = proctest.Build(binDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// workload is the rows every scenario of the package drains: the
// simulator's day (check.Day) of messages rows, each received at base + i
// ms, the same for the reference and every faulted feed.
type workload struct {
	rows []string
	base time.Time
}

var (
	loadOnce sync.Once
	load     workload
)

func theWorkload(t *testing.T) workload {
	t.Helper()
	loadOnce.Do(func() {
		day, loc := check.Today(t)
		load = workload{rows: check.Day(day, loc, messages), base: time.Now().UTC().Truncate(time.Second)}
	})
	return load
}

// reference drains the workload once, without faults, and returns what
// it left (shared by the package's scenarios; its services live until the
// test binary ends).
func reference(t *testing.T) check.Outcome {
	t.Helper()
	refOnce.Do(func() {
		w := theWorkload(t)
		// The reference is read into memory: its services may go with
		// the scenario that happened to build it.
		clean := check.NewWorld(t, "clean", flightfeed(t), check.WorldOptions{})
		clean.Put(w.rows, w.base)
		cmd := exec.Command(clean.Binary, "pump", "--config", clean.Config, "--drain")
		out, err := cmd.CombinedOutput()
		if err != nil {
			refErr = fmt.Sprintf("clean drain: %v\n%s", err, proctest.Tail(string(out), 40))
			return
		}
		ref = check.Read(t, clean.Feed)
		if err := check.Validate(ref, len(w.rows)); err != nil {
			refErr = err.Error()
			return
		}
		if r := check.Self(ref); !r.OK() {
			refErr = fmt.Sprintf("the clean run is not consistent itself: %v", r.Problems)
		}
	})
	if refErr != "" {
		t.Fatal(refErr)
	}
	return ref
}

// ---- a feed behind proxies -----------------------------------------------------

// world is one faulted feed: its own PostgreSQL database, MariaDB mailbox
// and in-process kfake broker, each behind a faultproxy. The pump's
// --config names the proxies; Feed (what check.Read reads with) names the
// databases directly and the broker by its proxy, the only address the
// broker advertises.
type world struct {
	check.Feed
	t *testing.T
	// pumpConfig is the pump's --config: every dependency through its
	// proxy.
	pumpConfig string
	pg, mysql  *faultproxy.Proxy
	// kafka is the proxy in front of the broker: kfake listens through
	// faultproxy.Listen, so its metadata names the proxy and a client
	// cannot bypass it.
	kafka   *faultproxy.Proxy
	cluster *kfake.Cluster
	mbox    *sql.DB
	pgDB    string
}

// mailboxTimeout, when set, is the pump's mailbox DSN's readTimeout and
// writeTimeout (the MySQL driver's; docs/security.md, What each DSN option does):
// without it a stalled mailbox connection waits for ever.
func newWorld(t *testing.T, name string, mailboxTimeout time.Duration) *world {
	t.Helper()
	w := &world{t: t}
	w.Name, w.Binary = name, flightfeed(t)
	w.MailboxDSN, w.DatabaseDSN = mailboxtest.NewMailbox(t), pgtest.New(t)

	var err error
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, check.StateTopic, check.NoticeTopic),
		kfake.ListenFn(faultproxy.Listen(func(p *faultproxy.Proxy) { w.kafka = p })))
	if err != nil {
		t.Fatalf("%s: start kfake: %v", name, err)
	}
	w.cluster = c
	t.Cleanup(func() {
		c.Close()
		w.kafka.Close()
	})
	w.Brokers = []string{w.kafka.Addr()}

	pgURL, err := url.Parse(w.DatabaseDSN)
	if err != nil {
		t.Fatal(err)
	}
	w.pgDB = strings.TrimPrefix(pgURL.Path, "/")
	w.pg = startProxy(t, pgURL.Host)
	pgProxied := *pgURL
	pgProxied.Host = w.pg.Addr()

	mcfg, err := mysql.ParseDSN(w.MailboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	w.mysql = startProxy(t, mcfg.Addr)
	mcfg.Addr = w.mysql.Addr()
	mcfg.ReadTimeout, mcfg.WriteTimeout = mailboxTimeout, mailboxTimeout

	f := feedtest.Feed{MailboxDSN: w.MailboxDSN, DatabaseDSN: w.DatabaseDSN, Brokers: w.Brokers,
		PollInterval: "20ms", BatchSize: 8, Pump: pumpOptions}
	safe := strings.NewReplacer("/", "-", "@", "-").Replace(name)
	w.Config = f.WriteConfig(t, safe+"-direct")
	f.MailboxDSN, f.DatabaseDSN = mcfg.FormatDSN(), pgProxied.String()
	w.pumpConfig = f.WriteConfig(t, safe+"-pump")

	if w.mbox, err = sql.Open("mysql", w.MailboxDSN); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.mbox.Close() })
	wl := theWorkload(t)
	w.put(wl.rows, wl.base)
	return w
}

func startProxy(t *testing.T, upstream string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// put inserts the rows as the AODB would (mailboxtest.PutRows).
func (w *world) put(rows []string, base time.Time) {
	w.t.Helper()
	mailboxtest.PutRows(w.t, w.mbox, w.Name, rows, base)
}

// processed counts the mailbox rows that carry their result (read
// directly, not through the proxy).
func (w *world) processed() int {
	w.t.Helper()
	return mailboxtest.ProcessedRows(w.t, w.mbox, w.Name)
}

// pgQuery runs fn on a direct connection of its own to the feed's
// database.
func (w *world) pgQuery(fn func(ctx context.Context, conn *pgx.Conn) error) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, w.DatabaseDSN)
	if err != nil {
		w.t.Fatalf("%s: connect to PostgreSQL: %v", w.Name, err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if err := fn(ctx, conn); err != nil {
		w.t.Fatalf("%s: %v", w.Name, err)
	}
}

// applied counts the messages with a terminal result in proc_state: what
// the pump committed, read directly.
func (w *world) applied() int {
	w.t.Helper()
	var n int
	w.pgQuery(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT count(*) FROM proc_state WHERE status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')`).Scan(&n)
	})
	return n
}

// delivered is the outbox's delivered cursor: the newest event id
// delivered to Kafka.
func (w *world) delivered() int64 {
	w.t.Helper()
	var n int64
	w.pgQuery(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT delivered_id FROM msg_event_cursor`).Scan(&n)
	})
	return n
}

// pending counts the outbox events not yet delivered.
func (w *world) pending() int {
	w.t.Helper()
	var n int
	w.pgQuery(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT count(*) FROM msg_event WHERE id > (SELECT delivered_id FROM msg_event_cursor)
			AND id NOT IN (SELECT event_id FROM msg_event_parked)`).Scan(&n)
	})
	return n
}

// ---- the pump process -----------------------------------------------------------

// proc is one `flightfeed pump` process.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	out  *proctest.Output
	done chan struct{}
	err  error
}

// startPump starts `flightfeed pump --config <pump config> args...`. A
// process still running when the test ends is killed; a failed test shows
// its log (FLIGHTFEED_TEST_LOG=1 streams it).
func startPump(t *testing.T, name, bin, config string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, out: &proctest.Output{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"pump", "--config", config}, args...)...)
	var sink io.Writer = p.out
	if os.Getenv("FLIGHTFEED_TEST_LOG") != "" {
		sink = io.MultiWriter(p.out, proctest.Prefixed(t.Name()+" "+name+": "))
	}
	p.cmd.Stdout, p.cmd.Stderr = sink, sink
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: start the pump: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s: log of pump pid %d (%v), last lines\n%s", name, p.cmd.Process.Pid, p.err, proctest.Tail(p.out.String(), 60))
		}
	})
	return p
}

func (w *world) drain() *proc { return startPump(w.t, w.Name, w.Binary, w.pumpConfig, "--drain") }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// finish waits for the drain to end and requires exit status 0.
func (p *proc) finish() {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(waitLong):
		p.t.Fatalf("%s: `pump --drain` did not finish within %s\n%s", p.name, waitLong, proctest.Tail(p.out.String(), 40))
	}
	if p.err != nil {
		p.t.Fatalf("%s: `pump --drain` failed: %v\n%s", p.name, p.err, proctest.Tail(p.out.String(), 40))
	}
}

// logLine is one JSON line of a process's log.
type logLine = proctest.LogLine

// logs returns the log lines whose message is msg (every line when msg
// is empty).
func (p *proc) logs(msg string) []logLine { return proctest.LogLines(p.out.String(), msg) }

// waitLog waits until the pump logged a line with message msg whose
// error satisfies match, and returns it.
func (p *proc) waitLog(what, msg string, match func(logLine) bool) logLine {
	p.t.Helper()
	var got logLine
	await.EventuallyEvery(p.t, p.name+": "+what, waitLong, poll, func() (bool, string) {
		for _, l := range p.logs(msg) {
			if match(l) {
				got = l
				return true, ""
			}
		}
		if p.exited() {
			p.t.Fatalf("%s: the pump exited (%v) before logging %s\n%s", p.name, p.err, what, proctest.Tail(p.out.String(), 40))
		}
		return false, fmt.Sprintf("%d lines logged", len(p.logs("")))
	})
	return got
}

// waitProcessed waits until at least n rows carry their result while p
// drains, and returns the count; a drain that ended first fails the test.
func (w *world) waitProcessed(p *proc, n int) int {
	w.t.Helper()
	var got int
	await.EventuallyEvery(w.t, fmt.Sprintf("%s: %d of %d mailbox rows processed", w.Name, n, messages), waitLong, poll, func() (bool, string) {
		got = w.processed()
		if p.exited() {
			w.t.Fatalf("%s: the pump exited (%v) with %d of %d rows processed, before the fault at %d: the scenario proves nothing\n%s",
				w.Name, p.err, got, messages, n, proctest.Tail(p.out.String(), 40))
		}
		return got >= n, fmt.Sprintf("%d processed", got)
	})
	if got >= messages {
		w.t.Fatalf("%s: all %d rows were processed before the fault at %d: the scenario proves nothing", w.Name, messages, n)
	}
	return got
}
