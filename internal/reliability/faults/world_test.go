//go:build reliability

package faults_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/faultproxy"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// ModeEnv selects the mode: "full" strikes more often per scenario.
const ModeEnv = "FLIGHTFEED_RELIABILITY"

func full() bool { return os.Getenv(ModeEnv) == "full" }

// waitLong bounds every wait without a tighter bound of its own. Waits
// are polls with deadlines, never assertions on how long something took.
const waitLong = proctest.WaitLong

// poll is how often the waits look.
const poll = proctest.Poll

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
	refErr  error
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
	want check.Expected
}

var (
	loadOnce sync.Once
	load     workload
)

func theWorkload(t *testing.T) workload {
	t.Helper()
	loadOnce.Do(func() {
		day, loc := check.Today(t)
		load = workload{rows: check.Day(day, loc, messages), base: time.Now().UTC().Truncate(time.Second), want: check.ExpectDay(day, loc, messages)}
	})
	return load
}

// reference drains the workload once, without faults, and returns what
// it left (check.CleanRun, shared by the package's scenarios).
func reference(t *testing.T) check.Outcome {
	t.Helper()
	refOnce.Do(func() {
		w := theWorkload(t)
		ref, refErr = check.CleanRun(t, flightfeed(t), w.rows, w.base, w.want)
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	return ref
}

// ---- a feed behind proxies -----------------------------------------------------

// world is one faulted feed (check.World): its own PostgreSQL database,
// MariaDB mailbox and in-process kfake broker, each behind a faultproxy.
// The pump's --config names the proxies; Config and Feed (what check.Read
// reads with) name the databases directly and the broker by its proxy,
// the only address the broker advertises.
type world struct {
	*check.World
	t *testing.T
	// pumpConfig is the pump's --config: every dependency through its
	// proxy.
	pumpConfig string
	pg, mysql  *faultproxy.Proxy
	// kafka is the proxy in front of the broker: kfake listens through
	// faultproxy.Listen, so its metadata names the proxy and a client
	// cannot bypass it. With worldOptions.restartable it is nil and
	// broker is a kfake that can go down and come back.
	kafka  *faultproxy.Proxy
	broker *broker
	pgDB   string
}

// worldOptions shape newWorld's feed.
type worldOptions struct {
	// mailboxTimeout, when set, is the pump's mailbox DSN's readTimeout and
	// writeTimeout (the MySQL driver's; docs/security.md, What each DSN option does):
	// without it a stalled mailbox connection waits for ever.
	mailboxTimeout time.Duration
	// restartable: the broker is a kfake of its own on a fixed port with
	// its log on disk (no proxy), so it can stop and start again.
	restartable bool
}

func newWorld(t *testing.T, name string, opts worldOptions) *world {
	t.Helper()
	w := &world{t: t}
	var brokers []string
	if opts.restartable {
		w.broker = newBroker(t)
		brokers = []string{w.broker.addr()}
	} else {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, check.StateTopic, check.NoticeTopic),
			kfake.ListenFn(faultproxy.Listen(func(p *faultproxy.Proxy) { w.kafka = p })))
		if err != nil {
			t.Fatalf("%s: start kfake: %v", name, err)
		}
		t.Cleanup(func() {
			c.Close()
			w.kafka.Close()
		})
		brokers = []string{w.kafka.Addr()}
	}
	w.World = check.NewWorld(t, name, flightfeed(t), check.WorldOptions{Pump: pumpOptions, Brokers: brokers})
	// The test's only session on the mailbox database, so a fault that
	// kills every other session there kills exactly the pump's.
	w.Mailbox.SetMaxOpenConns(1)

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
	mcfg.ReadTimeout, mcfg.WriteTimeout = opts.mailboxTimeout, opts.mailboxTimeout

	w.pumpConfig = feedtest.Feed{MailboxDSN: mcfg.FormatDSN(), DatabaseDSN: pgProxied.String(), Brokers: brokers,
		PollInterval: "20ms", BatchSize: 8, Pump: pumpOptions}.WriteConfig(t, strings.NewReplacer("/", "-", "@", "-").Replace(name)+"-pump")
	wl := theWorkload(t)
	w.Put(wl.rows, wl.base)
	return w
}

func startProxy(t *testing.T, upstream string) *faultproxy.Proxy { return faultproxy.New(t, upstream) }

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
	return w.Count(`SELECT count(*) FROM proc_state WHERE status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')`)
}

// delivered is the outbox's delivered cursor: the newest event id
// delivered to Kafka.
func (w *world) delivered() int {
	w.t.Helper()
	return w.Count(`SELECT delivered_id FROM msg_event_cursor`)
}

// ---- the pump process -----------------------------------------------------------

// drain starts `flightfeed pump --config <pump config> --drain` as the
// world's process (its PostgreSQL sessions' application_name is the
// world's name); one still running when the test ends is killed.
func (w *world) drain() *proctest.Proc {
	w.t.Helper()
	return proctest.Start(w.t, w.Binary, proctest.Spec{ID: w.Name, Args: []string{"pump", "--config", w.pumpConfig, "--drain"}, KillAtEnd: true})
}

// logLine is one JSON line of a process's log.
type logLine = proctest.LogLine

// waitProcessed waits until at least n rows carry their result while p
// drains, and returns the count; a drain that ended first fails the test.
func (w *world) waitProcessed(p *proctest.Proc, n int) int {
	w.t.Helper()
	var got int
	await.EventuallyEvery(w.t, fmt.Sprintf("%s: %d of %d mailbox rows processed", w.Name, n, messages), waitLong, poll, func() (bool, string) {
		got = w.Processed()
		if p.Exited() {
			w.t.Fatalf("%s: the pump exited (%v) with %d of %d rows processed, before the fault at %d: the scenario proves nothing\n%s",
				w.Name, p.Err(), got, messages, n, proctest.Tail(p.Output(), 40))
		}
		return got >= n, fmt.Sprintf("%d processed", got)
	})
	if got >= messages {
		w.t.Fatalf("%s: all %d rows were processed before the fault at %d: the scenario proves nothing", w.Name, messages, n)
	}
	return got
}

// ---- ending the pump's sessions from outside ------------------------------------

// terminatePostgres terminates every session of the pump on the world's
// database (pg_terminate_backend; its application_name is the world's
// name, proctest.Spec.ID) and reports them.
func (w *world) terminatePostgres() cut {
	w.t.Helper()
	var c cut
	w.pgQuery(func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT coalesce(state, '') <> 'idle', pg_terminate_backend(pid)
			FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND pid <> pg_backend_pid()`, w.pgDB, w.Name)
		if err != nil {
			return fmt.Errorf("terminate the PostgreSQL sessions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var busy, ok bool
			if err := rows.Scan(&busy, &ok); err != nil {
				return err
			}
			if ok {
				c.sessions++
				if busy {
					c.busy++
				}
			}
		}
		return rows.Err()
	})
	return c
}

// killMailboxSessions kills (KILL id) every MariaDB session on the
// world's mailbox database but the test's own (its only one: newWorld),
// and reports them.
func (w *world) killMailboxSessions() cut {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := w.Mailbox.Conn(ctx)
	if err != nil {
		w.t.Fatalf("%s: mailbox connection: %v", w.Name, err)
	}
	defer func() { _ = conn.Close() }()
	sessions, err := mailboxSessions(ctx, conn)
	if err != nil {
		w.t.Fatalf("%s: list the mailbox sessions: %v", w.Name, err)
	}
	var c cut
	for _, s := range sessions {
		_, err := conn.ExecContext(ctx, fmt.Sprintf("KILL %d", s.id))
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1094 { // unknown thread: it ended meanwhile
			continue
		}
		if err != nil {
			w.t.Fatalf("%s: KILL %d: %v", w.Name, s.id, err)
		}
		c.sessions++
		if s.busy {
			c.busy++
		}
	}
	return c
}

// mailboxSession is a row of information_schema.PROCESSLIST.
type mailboxSession struct {
	id   int64
	busy bool // running a command, not sleeping
}

// mailboxSessions lists the sessions on conn's database but conn's own.
func mailboxSessions(ctx context.Context, conn *sql.Conn) ([]mailboxSession, error) {
	rows, err := conn.QueryContext(ctx, `SELECT ID, COMMAND <> 'Sleep' FROM information_schema.PROCESSLIST
		WHERE DB = DATABASE() AND ID <> CONNECTION_ID()`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []mailboxSession
	for rows.Next() {
		var s mailboxSession
		if err := rows.Scan(&s.id, &s.busy); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ---- a broker that restarts ----------------------------------------------------------

// broker is an in-process kfake broker on a fixed loopback port whose log
// is kept in a directory, so it can go down and come back on the same
// address with the same topics and records, as a restarted broker would.
type broker struct {
	t    *testing.T
	port int
	dir  string

	mu      sync.Mutex
	cluster *kfake.Cluster
}

func newBroker(t *testing.T) *broker {
	t.Helper()
	b := &broker{t: t, port: freePort(t), dir: t.TempDir()}
	b.start()
	t.Cleanup(b.stop)
	return b
}

func (b *broker) addr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

// start starts the broker: the first time it creates the two topics (three
// partitions each, as kafkatest.New does); a restart reloads them, with
// their records, from the log directory.
func (b *broker) start() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cluster != nil {
		b.t.Fatal("broker already running")
	}
	// The port was free a moment ago; a bind refused meanwhile is retried.
	await.EventuallyEvery(b.t, "the kfake broker to listen on "+b.addr(), 10*time.Second, poll, func() (bool, string) {
		c, err := kfake.NewCluster(kfake.Ports(b.port), kfake.DataDir(b.dir), kfake.SeedTopics(3, check.StateTopic, check.NoticeTopic))
		if err != nil {
			return false, err.Error()
		}
		b.cluster = c
		return true, ""
	})
}

// stop closes the broker: its listener and every client connection.
func (b *broker) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cluster != nil {
		b.cluster.Close()
		b.cluster = nil
	}
}

// freePort finds a free loopback port below Linux's ephemeral range
// (32768 and up by default), so that while the broker is down no outgoing
// connection is given its port and it can come back on it.
func freePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		var lc net.ListenConfig
		l, err := lc.Listen(context.Background(), "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = l.Close()
			return port
		}
	}
	t.Fatal("no free loopback port between 20000 and 32000")
	return 0
}
