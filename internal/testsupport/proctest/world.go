package proctest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the mailbox's driver
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// World is one feed on fresh services of one test: its own PostgreSQL
// database, MariaDB mailbox (default tables) and Kafka broker, the
// --config file naming them (the test feed of docs/first-feed.md, feedtest), a pool
// on the database and a connection pool on the mailbox. The processes of
// the feed run the built binary (Start); World reads what they leave.
type World struct {
	t testing.TB
	// Name tells the feed apart in messages ("clean", "after-commit@3").
	Name string
	// Binary runs the feed's commands (Run); Config is its --config file.
	Binary, Config string
	// DatabaseDSN is the PostgreSQL state database; MailboxDSN the MariaDB
	// mailbox; Brokers the Kafka broker's addresses.
	DatabaseDSN, MailboxDSN string
	Brokers                 []string
	Pool                    *pgxpool.Pool
	Mailbox                 *sql.DB
}

// WorldOptions shape NewWorld's feed.
type WorldOptions struct {
	// Feed's polling, batch size and pump section go into the --config
	// (its DSNs and brokers are the world's).
	Feed feedtest.Feed
	// Brokers, when set, is the feed's Kafka broker; otherwise a fresh
	// one of kafkatest with the feed's two topics.
	Brokers []string
}

// NewWorld creates a world named name whose commands run binary.
// Everything is removed when t ends.
func NewWorld(t testing.TB, name, binary string, opts WorldOptions) *World {
	t.Helper()
	w := &World{t: t, Name: name, Binary: binary, DatabaseDSN: pgtest.New(t), MailboxDSN: mailboxtest.NewMailbox(t), Brokers: opts.Brokers}
	if w.Brokers == nil {
		w.Brokers = kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")
	}
	f := opts.Feed
	f.MailboxDSN, f.DatabaseDSN, f.Brokers = w.MailboxDSN, w.DatabaseDSN, w.Brokers
	w.Config = f.WriteConfig(t, strings.NewReplacer("@", "-", "/", "-").Replace(name))
	var err error
	if w.Pool, err = pgxpool.New(context.Background(), w.DatabaseDSN); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(w.Pool.Close)
	if w.Mailbox, err = sql.Open("mysql", w.MailboxDSN); err != nil {
		t.Fatalf("%s: open the mailbox: %v", name, err)
	}
	t.Cleanup(func() { _ = w.Mailbox.Close() })
	return w
}

// RunTimeout bounds one run of a command to its end (Run).
const RunTimeout = 3 * time.Minute

// Run runs `flightfeed <command> --config F args...` to the end and
// returns its standard output; a failure fails the test with the last
// lines of its standard error.
func (w *World) Run(command string, args ...string) string {
	w.t.Helper()
	return RunCommand(w.t, w.Name, w.Binary, w.Config, command, args...)
}

// RunCommand is World.Run for a feed given by its binary and --config.
func RunCommand(t testing.TB, name, binary, config, command string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), RunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{command, "--config", config}, args...)...) //nolint:gosec // the test's own binary
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: flightfeed %s --config %s: %v\n%s", name, command, config, err, Tail(stderr.String(), 40))
	}
	return string(out)
}

// Start starts `flightfeed pump --config F args...` on the world as id
// (Spec.ID) in the background.
func (w *World) Start(id string, killAtEnd bool, env []string, args ...string) *Proc {
	w.t.Helper()
	return Start(w.t, w.Binary, Spec{ID: id, Args: append([]string{"pump", "--config", w.Config}, args...), Env: env, KillAtEnd: killAtEnd})
}

// Migrate creates the state database's schema with the binary.
func (w *World) Migrate() {
	w.t.Helper()
	w.Run("migrate")
}

// Put inserts the rows as the AODB would, row i received at base + i ms,
// fifty to a statement (mailboxtest.PutRows).
func (w *World) Put(rows []string, base time.Time) {
	w.t.Helper()
	mailboxtest.PutRows(w.t, w.Mailbox, w.Name, rows, base)
}

// Insert inserts one mailbox row received at received.
func (w *World) Insert(body string, received time.Time) error {
	_, err := mailbox.WriteInbound(context.Background(), w.Mailbox, mailbox.Inbound{Received: received, Body: body})
	if err != nil {
		return fmt.Errorf("%s: insert mailbox row: %w", w.Name, err)
	}
	return nil
}

// Processed counts the mailbox rows that carry their result.
func (w *World) Processed() int {
	w.t.Helper()
	return mailboxtest.ProcessedRows(w.t, w.Mailbox, w.Name)
}

// MailboxDump lists every row's result, for comparing runs.
func (w *World) MailboxDump() string { return mailboxtest.Results(w.t, w.Mailbox) }

// Count runs a query of one integer on the state database.
func (w *World) Count(query string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %s: %v", w.Name, query, err)
	}
	return n
}

// Lock reads pipeline_lock: the writer the database lets commit and its
// fencing epoch ("" and 0 while nobody took it).
func (w *World) Lock(ctx context.Context) (holder string, epoch int64, err error) {
	var h *string
	err = w.Pool.QueryRow(ctx, `SELECT holder, epoch FROM pipeline_lock WHERE name = $1`, store.LockName).Scan(&h, &epoch)
	if h != nil {
		holder = *h
	}
	return holder, epoch, err
}

// PendingEvents counts the outbox events not yet delivered nor parked.
func (w *World) PendingEvents() int {
	w.t.Helper()
	return w.Count(`SELECT COUNT(*) FROM msg_event_record WHERE id > (SELECT delivered_id FROM msg_event_cursor)
		AND (id, kind) NOT IN (SELECT event_id, kind FROM msg_event_parked)`)
}

// WaitDrained waits until all n mailbox rows carry a result and every
// outbox event is delivered, polling every poll.
func (w *World) WaitDrained(n int, within, poll time.Duration) {
	w.t.Helper()
	await.EventuallyEvery(w.t, fmt.Sprintf("%s: all %d mailbox rows processed and the outbox delivered", w.Name, n), within, poll, func() (bool, string) {
		p, e := w.Processed(), w.PendingEvents()
		return p == n && e == 0, fmt.Sprintf("%d of %d processed, %d events pending", p, n, e)
	})
}

var rqfdDay = regexp.MustCompile(`<STDB>(\d{2}[A-Za-z]{3}\d{2})0000</STDB>`)

// RequestDay is the day (in loc, as 2006-01-02) that the full-day request
// body (an RQFD in COUTMSGS) asks for.
func RequestDay(body string, loc *time.Location) (string, error) {
	m := rqfdDay.FindStringSubmatch(body)
	if m == nil {
		return "", fmt.Errorf("a request without a day start: %s", body)
	}
	d, err := time.ParseInLocation("02Jan06", m[1], loc)
	if err != nil {
		return "", err
	}
	return d.Format(time.DateOnly), nil
}

// WaitRequest waits for the pump's first full-day request in COUTMSGS and
// returns the day it asks for, in loc.
func (w *World) WaitRequest(loc *time.Location, within, poll time.Duration) string {
	w.t.Helper()
	var day string
	await.EventuallyEvery(w.t, w.Name+": the pump's RQFD in COUTMSGS", within, poll, func() (bool, string) {
		var body string
		err := w.Mailbox.QueryRowContext(context.Background(),
			`SELECT COUTMSGS_CLOB_MSG FROM COUTMSGS WHERE COUTMSGS_CLOB_MSG LIKE '%<TYPE>RQFD</TYPE>%' ORDER BY COUTMSGS_ID LIMIT 1`).Scan(&body)
		if err == nil {
			day, err = RequestDay(body, loc)
		}
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return day
}

// Sessions counts the sessions on the state database whose
// application_name is app (a process's Spec.ID, a pod's name).
func (w *World) Sessions(app string) (int, error) {
	var n int
	err := w.Pool.QueryRow(context.Background(), `SELECT COUNT(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, app).Scan(&n)
	return n, err
}

// ---- the workload ------------------------------------------------------------------

// Messages is rounds from..to-1 of the day's traffic from `flightfeed
// simulate`'s generator for flights flights, with fixed seeds (the same
// messages for every run), each with what it is for: a DNLD window push,
// a FLOP of every kind, an ADFT, an FDEL and two malformed rows per round.
func Messages(day string, loc *time.Location, flights, from, to int) []simulate.Message {
	var out []simulate.Message
	for k := from; k < to; k++ {
		out = append(out, simulate.Stream(simulate.Options{Day: day, Flights: flights, Seed: uint64(k + 2), //nolint:gosec // small round numbers
			FirstSeqn: 1000 * (k + 1), Malformed: 2, Location: loc})...)
	}
	return out
}

// Traffic is the bodies of Messages.
func Traffic(day string, loc *time.Location, flights, from, to int) []string {
	var rows []string
	for _, m := range Messages(day, loc, flights, from, to) {
		rows = append(rows, m.Body)
	}
	return rows
}

// Workload is the AODB's side of a day: the RESP answering the pump's
// full-day request for day (row 1, flights flights), then rounds of
// Traffic.
func Workload(day string, loc *time.Location, flights, rounds int) []string {
	rows := []string{simulate.Response(simulate.Options{Day: day, Flights: flights, Seed: 1, FirstSeqn: 1, Location: loc}).Body}
	return append(rows, Traffic(day, loc, flights, 0, rounds)...)
}

// ---- the write audit ---------------------------------------------------------------

// InstallAudit adds triggers (test-owned, beside the product's schema,
// after `flightfeed migrate`) that record, inside every transaction
// writing the pump's tables, which process wrote (its application_name:
// Spec.ID, PGAPPNAME) and what pipeline_lock said at that moment. The
// audit row commits if and only if the pump's transaction commits, so
// the table is the list of committed fenced writes and who made them.
//
// The pump's transactions lock pipeline_lock first and check their epoch,
// so the holder the trigger reads is the writer itself — unless fencing
// failed: a paused ex-holder that committed after another process took a
// newer epoch would be recorded with app ≠ holder.
func (w *World) InstallAudit() {
	w.t.Helper()
	stmts := []string{
		`CREATE TABLE test_write_audit (
			id bigserial PRIMARY KEY, tbl text NOT NULL, message_id bigint,
			app text NOT NULL, holder text NOT NULL, epoch bigint NOT NULL)`,
		// One function per trigger level: a statement has no NEW row.
		`CREATE FUNCTION test_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO test_write_audit (tbl, message_id, app, holder, epoch)
			SELECT TG_TABLE_NAME, NEW.message_id, current_setting('application_name'), coalesce(holder, ''), epoch
			FROM pipeline_lock WHERE name = '` + store.LockName + `';
			RETURN NULL;
		END $$`,
		`CREATE FUNCTION test_audit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO test_write_audit (tbl, app, holder, epoch)
			SELECT TG_TABLE_NAME, current_setting('application_name'), coalesce(holder, ''), epoch
			FROM pipeline_lock WHERE name = '` + store.LockName + `';
			RETURN NULL;
		END $$`,
		// proc_state: one row per message, written only in fenced
		// transactions; the state, ledger and outbox tables per statement.
		// (The dispatcher's delivery marks, request bookkeeping and backfill
		// clean-up are not fenced writes and are not audited.)
		`CREATE TRIGGER test_audit AFTER INSERT OR UPDATE ON proc_state FOR EACH ROW EXECUTE FUNCTION test_audit_row()`,
		`CREATE TRIGGER test_audit AFTER INSERT OR UPDATE OR DELETE ON flight_schd FOR EACH STATEMENT EXECUTE FUNCTION test_audit()`,
		`CREATE TRIGGER test_audit AFTER INSERT OR UPDATE OR DELETE ON schd_gen FOR EACH STATEMENT EXECUTE FUNCTION test_audit()`,
		`CREATE TRIGGER test_audit AFTER INSERT ON msg_event FOR EACH STATEMENT EXECUTE FUNCTION test_audit()`,
		`CREATE TRIGGER test_audit AFTER INSERT ON backfill_todo FOR EACH STATEMENT EXECUTE FUNCTION test_audit()`,
	}
	for _, s := range stmts {
		if _, err := w.Pool.Exec(context.Background(), s); err != nil {
			w.t.Fatalf("%s: install the write audit: %v\n%s", w.Name, err, s)
		}
	}
}

// Write is one audited write.
type Write struct {
	ID        int64
	Table     string
	MessageID int64
	App       string
	Holder    string
	Epoch     int64
}

func (a Write) String() string {
	return fmt.Sprintf("#%d %s msg=%d by %s, pipeline_lock %s@%d", a.ID, a.Table, a.MessageID, a.App, a.Holder, a.Epoch)
}

// Audit returns every audited write (InstallAudit) in commit order, and
// fails the test for one whose writer is not the holder pipeline_lock
// named in its own transaction.
func (w *World) Audit() []Write {
	w.t.Helper()
	rows, err := w.Pool.Query(context.Background(), `SELECT id, tbl, coalesce(message_id, 0), app, holder, epoch FROM test_write_audit ORDER BY id`)
	if err != nil {
		w.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Write])
	if err != nil {
		w.t.Fatal(err)
	}
	for _, a := range out {
		if a.App != a.Holder {
			w.t.Errorf("%s: a write committed by %q while pipeline_lock named %q: %s", w.Name, a.App, a.Holder, a)
		}
	}
	return out
}
