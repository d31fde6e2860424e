//go:build reliability

package partition_test

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// waitLong bounds every wait without a tighter bound of its own. Waits
// are polls with deadlines, never assertions on how long something took.
const waitLong = 2 * time.Minute

const poll = 25 * time.Millisecond

// messages is the size of the day each scenario runs.
const messages = 600

// ---- the workload and its reference --------------------------------------------

var (
	loadOnce sync.Once
	rows     []string
	base     time.Time

	refOnce sync.Once
	ref     check.Outcome
	refErr  string
)

func workload(t *testing.T) ([]string, time.Time) {
	t.Helper()
	loadOnce.Do(func() {
		day, loc := check.Today(t)
		rows, base = check.Day(day, loc, messages), time.Now().UTC().Truncate(time.Second)
	})
	return rows, base
}

// reference is one clean `pump --drain` of the workload, read into memory
// once for the package.
func reference(t *testing.T) check.Outcome {
	t.Helper()
	refOnce.Do(func() {
		rows, base := workload(t)
		clean := check.NewWorld(t, "clean", binary, check.WorldOptions{})
		clean.Put(rows, base)
		out, err := exec.Command(binary, "pump", "--config", clean.Config, "--drain").CombinedOutput()
		if err != nil {
			refErr = fmt.Sprintf("clean drain: %v\n%s", err, proctest.Tail(string(out), 40))
			return
		}
		ref = check.Read(t, clean.Feed)
		if err := check.Validate(ref, len(rows)); err != nil {
			refErr = err.Error()
		}
	})
	if refErr != "" {
		t.Fatal(refErr)
	}
	return ref
}

// ---- the feed's database: migrate, audit ----------------------------------------

// feed is one scenario's world (check.NewWorld) with its database
// migrated and the write audit installed.
type feed struct {
	*check.World
	t    *testing.T
	pool *pgxpool.Pool
}

func newFeed(t *testing.T, name string) *feed {
	t.Helper()
	w := check.NewWorld(t, name, binary, check.WorldOptions{})
	w.Run(t, "migrate")
	pool, err := pgxpool.New(context.Background(), w.DatabaseDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f := &feed{World: w, t: t, pool: pool}
	f.installAudit()
	return f
}

// installAudit records every fenced write with the writer's
// application_name (PGAPPNAME: the process's identity) and the holder and
// epoch pipeline_lock names in that very transaction.
func (f *feed) installAudit() {
	f.t.Helper()
	stmts := []string{
		`CREATE TABLE reliability_write_audit (
			id bigserial PRIMARY KEY, tbl text NOT NULL, message_id bigint,
			app text NOT NULL, holder text NOT NULL, epoch bigint NOT NULL)`,
		`CREATE FUNCTION reliability_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO reliability_write_audit (tbl, message_id, app, holder, epoch)
			SELECT TG_TABLE_NAME, NEW.message_id, current_setting('application_name'), coalesce(holder, ''), epoch
			FROM pipeline_lock WHERE name = 'FLIGHT_SCHD_WRITER';
			RETURN NULL;
		END $$`,
		`CREATE FUNCTION reliability_audit_statement() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO reliability_write_audit (tbl, app, holder, epoch)
			SELECT TG_TABLE_NAME, current_setting('application_name'), coalesce(holder, ''), epoch
			FROM pipeline_lock WHERE name = 'FLIGHT_SCHD_WRITER';
			RETURN NULL;
		END $$`,
		`CREATE TRIGGER reliability_audit AFTER INSERT OR UPDATE ON proc_state FOR EACH ROW EXECUTE FUNCTION reliability_audit_row()`,
		`CREATE TRIGGER reliability_audit AFTER INSERT OR UPDATE OR DELETE ON flight_schd FOR EACH STATEMENT EXECUTE FUNCTION reliability_audit_statement()`,
		`CREATE TRIGGER reliability_audit AFTER INSERT ON msg_event FOR EACH STATEMENT EXECUTE FUNCTION reliability_audit_statement()`,
	}
	for _, s := range stmts {
		if _, err := f.pool.Exec(context.Background(), s); err != nil {
			f.t.Fatalf("install the write audit: %v\n%s", err, s)
		}
	}
}

// write is one audited write.
type write struct {
	ID        int64
	Table     string
	MessageID int64
	App       string
	Holder    string
	Epoch     int64
}

func (a write) String() string {
	return fmt.Sprintf("#%d %s msg=%d by %s, pipeline_lock %s@%d", a.ID, a.Table, a.MessageID, a.App, a.Holder, a.Epoch)
}

// audit returns every audited write, and fails the test for one whose
// writer is not the holder pipeline_lock named in its transaction.
func (f *feed) audit() []write {
	f.t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT id, tbl, coalesce(message_id, 0), app, holder, epoch FROM reliability_write_audit ORDER BY id`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []write
	for rows.Next() {
		var a write
		if err := rows.Scan(&a.ID, &a.Table, &a.MessageID, &a.App, &a.Holder, &a.Epoch); err != nil {
			f.t.Fatal(err)
		}
		if a.App != a.Holder {
			f.t.Errorf("%s: a write committed by %q while pipeline_lock named %q: %s", f.Name, a.App, a.Holder, a)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// lock reads pipeline_lock.
func (f *feed) lock() (holder string, epoch int64) {
	f.t.Helper()
	var h *string
	if err := f.pool.QueryRow(context.Background(), `SELECT holder, epoch FROM pipeline_lock WHERE name = $1`, store.LockName).Scan(&h, &epoch); err != nil {
		f.t.Fatal(err)
	}
	if h != nil {
		holder = *h
	}
	return holder, epoch
}

func (f *feed) count(query string) int64 {
	f.t.Helper()
	var n int64
	if err := f.pool.QueryRow(context.Background(), query).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// waitSettled waits until every row is processed and written back and
// every event delivered, while a pump keeps running.
func (f *feed) waitSettled() {
	f.t.Helper()
	await.EventuallyEvery(f.t, f.Name+": every row processed and every event delivered", waitLong, poll, func() (bool, string) {
		processed := f.Processed()
		pending := f.count(`SELECT count(*) FROM msg_event WHERE id > (SELECT delivered_id FROM msg_event_cursor)`)
		backfill := f.count(`SELECT count(*) FROM backfill_todo`)
		return processed == messages && pending == 0 && backfill == 0,
			fmt.Sprintf("%d processed, %d events pending, %d results not written back", processed, pending, backfill)
	})
}

// ---- processes -------------------------------------------------------------------

// proc is one flightfeed process.
type proc struct {
	t    *testing.T
	id   string
	cmd  *exec.Cmd
	out  *proctest.Output
	done chan struct{}
	err  error
}

// start runs the binary with args as identity id (PGAPPNAME: the audit's
// application_name).
func start(t *testing.T, id string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, id: id, out: &proctest.Output{}, done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(append(os.Environ(), "PGAPPNAME="+id), env...)
	var sink io.Writer = p.out
	if os.Getenv("FLIGHTFEED_TEST_LOG") != "" {
		sink = io.MultiWriter(p.out, proctest.Prefixed(id+" "))
	}
	p.cmd.Stdout, p.cmd.Stderr = sink, sink
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- log of %s (%v), last lines\n%s", id, p.err, proctest.Tail(p.out.String(), 80))
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process with SIGTERM (SIGKILL after 30 s).
func (p *proc) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Errorf("%s did not stop on SIGTERM", p.id)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// wait waits for the process to end and returns its exit error.
func (p *proc) wait() error {
	p.t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(waitLong):
		p.t.Fatalf("%s did not end within %s\n%s", p.id, waitLong, proctest.Tail(p.out.String(), 40))
		return nil
	}
}

// logLine is one JSON line of a process's log.
type logLine = proctest.LogLine

// logs returns the log lines whose message is msg (every line when msg
// is empty).
func (p *proc) logs(msg string) []logLine { return proctest.LogLines(p.out.String(), msg) }

// ---- Kafka records with their producer ----------------------------------------------

// produced is one committed record and the producer epoch that wrote it.
type produced struct {
	Topic         string
	Partition     int32
	Offset        int64
	ProducerID    int64
	ProducerEpoch int16
}

// committedRecords reads every committed record of the topics
// (read_committed) with its producer: as many as dispatchtest.Records
// finds on them (the topics are at rest when it is called).
func committedRecords(t *testing.T, brokers []string, topics ...string) []produced {
	t.Helper()
	want := 0
	for _, topic := range topics {
		want += len(dispatchtest.Records(t, brokers, topic))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []produced
	for len(out) < want {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read the topics: %d of %d records: %v", len(out), want, ctx.Err())
		}
		fetches.EachRecord(func(r *kgo.Record) {
			out = append(out, produced{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch})
		})
	}
	return out
}

// apiAddr is the API server's host:port.
func apiAddr(t *testing.T) string {
	t.Helper()
	host := restCfg.Host
	if !strings.Contains(host, "://") {
		return host
	}
	u, err := url.Parse(host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
