package faults_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// waitLong bounds every wait that has no tighter bound of its own. Waits
// are polls with deadlines, never assertions on how long something took.
const waitLong = 90 * time.Second

// pumpApp is the application_name of the pump processes' PostgreSQL
// sessions (pgx reads PGAPPNAME), which tells them apart from the test's.
const pumpApp = "flightfeed-faults-pump"

const (
	stateTopic  = "KAFKA_SCHD"
	noticeTopic = "KAFKA_MSG"
)

// feed is one world's --config, the same for the clean and the faulted
// world. Small batches make a drain many transactions long, so a fault
// lands between and inside them; the short backoff only keeps the retries
// after a fault quick (it changes no result).
func (w *world) feed() feedtest.Feed {
	return feedtest.Feed{MailboxDSN: w.mboxDSN, DatabaseDSN: w.pgDSN, Brokers: []string{w.broker.addr()},
		PollInterval: "20ms", BatchSize: 8, Pump: "backoffInitial: 50ms, backoffMax: 1s"}
}

// ---- the binary ----------------------------------------------------------------

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// flightfeed builds the binary under test from the repository's main.go,
// once for all the tests of the package.
func flightfeed(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "flightfeed-faults-"); buildErr != nil {
			return
		}
		binPath, buildErr = proctest.Build(binDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// ---- the workload ------------------------------------------------------------------

// workload is the AODB's side of a day, the same rows for every run: the
// RESP answering the pump's full-day request for day (row 1), then rounds
// of the day's traffic from `flightfeed simulate`'s generator — a DNLD
// window push, a FLOP of every kind, an ADFT, an FDEL and two malformed
// rows per round.
func workload(day string, loc *time.Location, flights, rounds int) []string {
	rows := []string{simulate.Response(simulate.Options{Day: day, Flights: flights, Seed: 1, FirstSeqn: 1, Location: loc}).Body}
	for k := range rounds {
		for _, m := range simulate.Stream(simulate.Options{Day: day, Flights: flights, Seed: uint64(k + 2),
			FirstSeqn: 1000 * (k + 1), Malformed: 2, Location: loc}) {
			rows = append(rows, m.Body)
		}
	}
	return rows
}

// ---- the Kafka broker ------------------------------------------------------------------

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
		c, err := kfake.NewCluster(kfake.Ports(b.port), kfake.DataDir(b.dir), kfake.SeedTopics(3, stateTopic, noticeTopic))
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

// ---- one world: databases, mailbox, broker ----------------------------------------------

// world is one feed's own PostgreSQL database, MariaDB mailbox and Kafka
// broker, with the --config file naming them.
type world struct {
	t       *testing.T
	name    string
	pgDSN   string
	mboxDSN string
	mboxDB  string
	broker  *broker
	config  string
	// mbox holds at most one connection: the test's only session on the
	// mailbox database, so a fault that kills every other session there
	// kills exactly the pump's.
	mbox *sql.DB
}

func newWorld(t *testing.T, name string) *world {
	t.Helper()
	w := &world{t: t, name: name, pgDSN: pgtest.New(t), mboxDSN: mailboxtest.NewMailbox(t), broker: newBroker(t)}
	cfg, err := mysql.ParseDSN(w.mboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	w.mboxDB = cfg.DBName
	w.config = w.feed().WriteConfig(t, name)
	w.mbox, err = sql.Open("mysql", w.mboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	w.mbox.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = w.mbox.Close() })
	return w
}

// pgDatabase is the name of the world's PostgreSQL database.
func (w *world) pgDatabase() string {
	u, err := url.Parse(w.pgDSN)
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// run runs the binary's command on this world's --config to the end and
// returns its standard output.
func (w *world) run(command string, args ...string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, flightfeed(w.t), append([]string{command, "--config", w.config}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("%s: flightfeed %s: %v\n%s", w.name, command, err, proctest.Tail(stderr.String(), 40))
	}
	return string(out)
}

// put inserts the rows as the AODB would, row i received at base + i ms
// (the same for every world fed with the same rows), fifty to a statement.
func (w *world) put(rows []string, base time.Time) {
	w.t.Helper()
	mailboxtest.PutRows(w.t, w.mbox, w.name, rows, base)
}

// processed counts the mailbox rows that carry their result.
func (w *world) processed() int {
	w.t.Helper()
	return mailboxtest.ProcessedRows(w.t, w.mbox, w.name)
}

// pg runs fn on a connection of its own to the world's database (never a
// pooled one a fault may have cut).
func (w *world) pg(fn func(ctx context.Context, conn *pgx.Conn) error) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, w.pgDSN)
	if err != nil {
		w.t.Fatalf("%s: connect to PostgreSQL: %v", w.name, err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if err := fn(ctx, conn); err != nil {
		w.t.Fatalf("%s: %v", w.name, err)
	}
}

// pendingEvents counts the outbox events not yet delivered.
func (w *world) pendingEvents() int {
	w.t.Helper()
	var n int
	w.pg(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT COUNT(*) FROM msg_event_record WHERE id > (SELECT delivered_id FROM msg_event_cursor) AND (id, kind) NOT IN (SELECT event_id, kind FROM msg_event_parked)`).Scan(&n)
	})
	return n
}

// ---- faults -----------------------------------------------------------------------

// cut is what one fault did: the sessions it ended, and how many of them
// were busy (in a query or transaction) rather than idle.
type cut struct {
	atRow          int
	sessions, busy int
}

func (c cut) String() string {
	return fmt.Sprintf("%d sessions (%d busy) at %d rows", c.sessions, c.busy, c.atRow)
}

// terminatePostgres terminates every session on the world's database but
// the one asking (pg_terminate_backend), as an operator would, and
// reports those of the pump.
func (w *world) terminatePostgres() cut {
	w.t.Helper()
	var c cut
	w.pg(func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT application_name, coalesce(state, '') <> 'idle', pg_terminate_backend(pid)
			FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, w.pgDatabase())
		if err != nil {
			return fmt.Errorf("terminate the PostgreSQL sessions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var app string
			var busy, ok bool
			if err := rows.Scan(&app, &busy, &ok); err != nil {
				return err
			}
			if ok && app == pumpApp {
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
// world's mailbox database but the test's own, and reports them.
func (w *world) killMailboxSessions() cut {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := w.mbox.Conn(ctx)
	if err != nil {
		w.t.Fatalf("%s: mailbox connection: %v", w.name, err)
	}
	defer func() { _ = conn.Close() }()
	sessions, err := mailboxSessions(ctx, conn, w.mboxDB)
	if err != nil {
		w.t.Fatalf("%s: list the mailbox sessions: %v", w.name, err)
	}
	var c cut
	for _, s := range sessions {
		_, err := conn.ExecContext(ctx, fmt.Sprintf("KILL %d", s.id))
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1094 { // unknown thread: it ended meanwhile
			continue
		}
		if err != nil {
			w.t.Fatalf("%s: KILL %d: %v", w.name, s.id, err)
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

// mailboxSessions lists the sessions on database db but conn's own.
func mailboxSessions(ctx context.Context, conn *sql.Conn, db string) ([]mailboxSession, error) {
	rows, err := conn.QueryContext(ctx, `SELECT ID, COMMAND <> 'Sleep' FROM information_schema.PROCESSLIST
		WHERE DB = ? AND ID <> CONNECTION_ID()`, db)
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

// ---- the pump process -----------------------------------------------------------------

// pumpProc is one `flightfeed pump --drain` process.
type pumpProc struct {
	t    *testing.T
	w    *world
	cmd  *exec.Cmd
	out  *proctest.Output
	done chan struct{}
	err  error // the exit status, once done is closed
}

// startPump starts `flightfeed pump --config F --drain` in the background.
// A process still running when the test ends is killed; a failed test
// shows its log (FLIGHTFEED_TEST_LOG=1 streams it).
func (w *world) startPump() *pumpProc {
	w.t.Helper()
	p := &pumpProc{t: w.t, w: w, out: &proctest.Output{}, done: make(chan struct{})}
	p.cmd = exec.Command(flightfeed(w.t), "pump", "--config", w.config, "--drain")
	p.cmd.Env = append(os.Environ(), "PGAPPNAME="+pumpApp)
	var sink io.Writer = p.out
	if os.Getenv("FLIGHTFEED_TEST_LOG") != "" { // stream the log as well
		sink = io.MultiWriter(p.out, proctest.Prefixed(w.t.Name()+" "+w.name+": "))
	}
	p.cmd.Stdout, p.cmd.Stderr = sink, sink
	if err := p.cmd.Start(); err != nil {
		w.t.Fatalf("%s: start pump: %v", w.name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	w.t.Cleanup(func() {
		if !p.exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if w.t.Failed() {
			w.t.Logf("--- %s: log of pump pid %d (%v), last lines\n%s", w.name, p.cmd.Process.Pid, p.err, proctest.Tail(p.out.String(), 60))
		}
	})
	return p
}

func (p *pumpProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill ends the process with SIGKILL and waits for it.
func (p *pumpProc) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatalf("%s: SIGKILL the pump: %v", p.w.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(waitLong):
		p.t.Fatalf("%s: the pump did not die of SIGKILL", p.w.name)
	}
}

// finish waits for the drain to end and requires exit status 0.
func (p *pumpProc) finish() {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(waitLong):
		p.t.Fatalf("%s: `pump --drain` did not finish within %s (%d mailbox rows processed, %d events pending)",
			p.w.name, waitLong, p.w.processed(), p.w.pendingEvents())
	}
	if p.err != nil {
		p.t.Fatalf("%s: `pump --drain` failed: %v\n%s", p.w.name, p.err, proctest.Tail(p.out.String(), 40))
	}
}

// waitProcessed waits until at least n of the total mailbox rows carry
// their result, while p drains, and returns the count. The fault that
// follows must land in the middle of the drain: a drain that ended first
// fails the test.
func (p *pumpProc) waitProcessed(n, total int) int {
	p.t.Helper()
	var got int
	await.EventuallyEvery(p.t, fmt.Sprintf("%s: %d of %d mailbox rows processed", p.w.name, n, total), waitLong, poll, func() (bool, string) {
		got = p.w.processed()
		if p.exited() {
			p.t.Fatalf("%s: the pump exited (%v) with %d of %d rows processed, before the fault at %d: the test proves nothing\n%s",
				p.w.name, p.err, got, total, n, proctest.Tail(p.out.String(), 40))
		}
		return got >= n, fmt.Sprintf("%d processed", got)
	})
	if got >= total {
		p.t.Fatalf("%s: all %d rows were processed before the fault at %d: the test proves nothing", p.w.name, total, n)
	}
	return got
}

// ---- the outcome of a drain and its comparison -------------------------------------------

// mailboxRow is one CMINMSGS row's result.
type mailboxRow struct {
	ID        int64
	Processed bool
	Result    string
	Note      string
}

// outcome is everything a drain leaves behind that a client can see.
type outcome struct {
	// export maps FLID to its `flightfeed export` line.
	export map[string]string
	// ledger is `flightfeed ledger`, line by line.
	ledger  []string
	mailbox []mailboxRow
	// outboxNotices are the KAFKA_MSG payloads the pump committed, in
	// commit order.
	outboxNotices []string
	// procState is each message's processing record: message id, status,
	// reason, note and flags (a retried batch must not flag what a clean
	// run does not).
	procState []string
	// state and notice are every record of the two topics, in partition
	// and offset order, read by a consumer of the test's own.
	state, notice []dispatchtest.Record
}

// outcome reads what the world's drain left behind.
func (w *world) outcome() outcome {
	w.t.Helper()
	o := outcome{export: map[string]string{}}
	for i, line := range lines(w.run("export")) {
		var doc struct {
			FLID string `json:"FLID"`
		}
		if err := json.Unmarshal([]byte(line), &doc); err != nil || doc.FLID == "" {
			w.t.Fatalf("%s: export line %d has no FLID (%v): %s", w.name, i+1, err, line)
		}
		if _, dup := o.export[doc.FLID]; dup {
			w.t.Errorf("%s: export has FLID %s twice", w.name, doc.FLID)
		}
		o.export[doc.FLID] = line
	}
	o.ledger = lines(w.run("ledger"))
	o.mailbox = w.mailboxRows()
	w.pg(func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT payload FROM msg_event_record WHERE kind = 'KAFKA_MSG' ORDER BY id`)
		if err != nil {
			return err
		}
		o.outboxNotices, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		rows, err = conn.Query(ctx, `SELECT format('%s %s %s %s %s', message_id, status, coalesce(reason, ''), coalesce(note, ''), flags)
			FROM proc_state ORDER BY message_id`)
		if err != nil {
			return err
		}
		o.procState, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	o.state = dispatchtest.Records(w.t, []string{w.broker.addr()}, stateTopic)
	o.notice = dispatchtest.Records(w.t, []string{w.broker.addr()}, noticeTopic)
	return o
}

func (w *world) mailboxRows() []mailboxRow {
	w.t.Helper()
	rows, err := w.mbox.QueryContext(w.t.Context(), `SELECT CMINMSGS_ID, CMINMSGS_DATE_PROCESSED IS NOT NULL,
		coalesce(CMINMSGS_PROC_RESULT, ''), coalesce(CMINMSGS_PROC_NOTE, '') FROM CMINMSGS ORDER BY CMINMSGS_ID`)
	if err != nil {
		w.t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var out []mailboxRow
	for rows.Next() {
		var r mailboxRow
		if err := rows.Scan(&r.ID, &r.Processed, &r.Result, &r.Note); err != nil {
			w.t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// checkTopics checks one world's topics against its own database: the
// state topic converges to the export (the last record per FLID, a
// tombstone deleting) with STATE_VERSION never decreasing per FLID in
// partition order, and the notice topic carries every committed notice at
// least once and nothing else.
func checkTopics(t *testing.T, name string, o outcome) {
	t.Helper()
	latest := map[string]string{}
	for k, v := range dispatchtest.Latest(o.state) {
		latest[k] = string(v)
	}
	if diff := cmp.Diff(o.export, latest); diff != "" {
		t.Errorf("%s: the last %s record per FLID differs from `flightfeed export` (-export +topic):\n%s", name, stateTopic, diff)
	}
	for _, p := range versionOrder(o.state) {
		t.Errorf("%s: %s: %s", name, stateTopic, p)
	}

	onTopic := map[string]int{}
	for _, r := range o.notice {
		onTopic[string(r.Value)]++
	}
	committed := map[string]bool{}
	var missing []string
	for _, n := range o.outboxNotices {
		committed[n] = true
		if onTopic[n] == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s: %d of %d committed notices are not on %s, e.g.\n%s", name, len(missing), len(o.outboxNotices), noticeTopic,
			strings.Join(missing[:min(5, len(missing))], "\n"))
	}
	var phantom []string
	for v := range onTopic {
		if !committed[v] {
			phantom = append(phantom, v)
		}
	}
	if len(phantom) > 0 {
		slices.Sort(phantom)
		t.Errorf("%s: %d notices on %s that the outbox never committed, e.g.\n%s", name, len(phantom), noticeTopic,
			strings.Join(phantom[:min(5, len(phantom))], "\n"))
	}
}

// versionOrder lists the violations of the state topic's order: every
// record of a FLID in one partition, its STATE_VERSION never decreasing.
func versionOrder(records []dispatchtest.Record) []string {
	var out []string
	part := map[string]int32{}
	last := map[string]dispatchtest.Record{}
	for _, r := range records {
		if p, ok := part[r.Key]; ok && p != r.Partition {
			out = append(out, fmt.Sprintf("FLID %s in partitions %d and %d", r.Key, p, r.Partition))
		}
		part[r.Key] = r.Partition
		v := r.StateVersion()
		if v < 0 {
			out = append(out, fmt.Sprintf("record %d/%d of FLID %s has no STATE_VERSION: %s", r.Partition, r.Offset, r.Key, r.Value))
			continue
		}
		if prev, ok := last[r.Key]; ok && v < prev.StateVersion() {
			out = append(out, fmt.Sprintf("FLID %s: STATE_VERSION %d at offset %d after %d at offset %d",
				r.Key, v, r.Offset, prev.StateVersion(), prev.Offset))
		}
		last[r.Key] = r
	}
	return out
}

// compareOutcomes requires the faulted drain to have ended exactly where
// the clean one did. State versions come from a sequence that rolled-back
// transactions also consume, and UPDATED_AT is a commit time, so both are
// masked in documents compared across the runs; everything else is
// compared exactly.
func compareOutcomes(t *testing.T, clean, faulted outcome) {
	t.Helper()
	if diff := cmp.Diff(maskMap(clean.export), maskMap(faulted.export)); diff != "" {
		t.Errorf("`flightfeed export` differs from the clean run's (-clean +faulted; STATE_VERSION and UPDATED_AT masked):\n%s", diff)
	}
	if diff := cmp.Diff(clean.ledger, faulted.ledger); diff != "" {
		t.Errorf("`flightfeed ledger` differs from the clean run's (-clean +faulted):\n%s", diff)
	}
	if diff := cmp.Diff(clean.mailbox, faulted.mailbox); diff != "" {
		t.Errorf("the mailbox results (CMINMSGS id, processed, result, note) differ from the clean run's (-clean +faulted):\n%s", diff)
	}
	if diff := cmp.Diff(clean.procState, faulted.procState); diff != "" {
		t.Errorf("proc_state (message id, status, reason, note, flags) differs from the clean run's (-clean +faulted):\n%s", diff)
	}
	// The notices: the same ones committed (as a multiset: a notice's
	// place in the outbox among other FLIDs' is not part of the contract),
	// which checkTopics found on each world's topic.
	if diff := cmp.Diff(sortedMasked(clean.outboxNotices), sortedMasked(faulted.outboxNotices)); diff != "" {
		t.Errorf("the committed %s notices differ from the clean run's (-clean +faulted; STATE_VERSION masked):\n%s", noticeTopic, diff)
	}
	var cleanNotices, faultedNotices []string
	for _, r := range clean.notice {
		cleanNotices = append(cleanNotices, string(r.Value))
	}
	for _, r := range faulted.notice {
		faultedNotices = append(faultedNotices, string(r.Value))
	}
	if diff := cmp.Diff(distinct(sortedMasked(cleanNotices)), distinct(sortedMasked(faultedNotices))); diff != "" {
		t.Errorf("the distinct notices on %s differ from the clean run's (-clean +faulted; STATE_VERSION masked):\n%s", noticeTopic, diff)
	}
}

var (
	stateVersion = regexp.MustCompile(`"STATE_VERSION":\d+`)
	updatedAt    = regexp.MustCompile(`"UPDATED_AT":"[^"]*"`)
)

// mask replaces what differs between two runs of the same rows.
func mask(doc string) string {
	doc = stateVersion.ReplaceAllString(doc, `"STATE_VERSION":"*"`)
	return updatedAt.ReplaceAllString(doc, `"UPDATED_AT":"*"`)
}

func maskMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = mask(v)
	}
	return out
}

func sortedMasked(docs []string) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = mask(d)
	}
	slices.Sort(out)
	return out
}

func distinct(sorted []string) []string { return slices.Compact(slices.Clone(sorted)) }

// ---- helpers ----------------------------------------------------------------------

// poll is how often the waits of the package look.
const poll = 20 * time.Millisecond

// freePort finds a free loopback port below Linux's ephemeral range
// (32768 and up by default), so that while the broker is down no outgoing
// connection is given its port and it can come back on it.
func freePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = l.Close()
			return port
		}
	}
	t.Fatal("no free loopback port between 20000 and 32000")
	return 0
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
