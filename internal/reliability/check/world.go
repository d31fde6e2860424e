package check

import (
	"bytes"
	"context"
	"database/sql"
	"os/exec"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the mailbox's driver

	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// The topics of the test feed (feedtest).
const (
	StateTopic  = "KAFKA_SCHD"
	NoticeTopic = "KAFKA_MSG"
)

// RunTimeout bounds one `flightfeed export` or `ledger` run.
const RunTimeout = 2 * time.Minute

// Feed is one feed whose outcome Read collects: its services, the binary
// and its --config file.
type Feed struct {
	// Name tells the feed apart in messages ("clean", "after-commit@3").
	Name string
	// Binary is the flightfeed binary that runs `export` and `ledger`;
	// Config the feed's --config file.
	Binary, Config string
	// MailboxDSN is the MariaDB mailbox (default layout: CMINMSGS);
	// DatabaseDSN the PostgreSQL state database.
	MailboxDSN, DatabaseDSN string
	Brokers                 []string
	// StateTopic and NoticeTopic default to KAFKA_SCHD and KAFKA_MSG.
	StateTopic, NoticeTopic string
}

func (f Feed) topics() (state, notice string) {
	state, notice = f.StateTopic, f.NoticeTopic
	if state == "" {
		state = StateTopic
	}
	if notice == "" {
		notice = NoticeTopic
	}
	return state, notice
}

// Run runs `flightfeed <command> --config F args...` to the end and
// returns its standard output; a failure fails the test with the last
// lines of its standard error.
func (f Feed) Run(t testing.TB, command string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), RunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.Binary, append([]string{command, "--config", f.Config}, args...)...) //nolint:gosec // the test's own binary
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: flightfeed %s: %v\n%s", f.Name, command, err, proctest.Tail(stderr.String(), 40))
	}
	return string(out)
}

// WorldOptions shape NewWorld's feed; zero values take the defaults.
type WorldOptions struct {
	// BatchSize of the mailbox (default 8: a 2,000-row day is hundreds of
	// transactions, so a fault lands between and inside them);
	// PollInterval (default 20ms).
	BatchSize    int
	PollInterval string
	// Pump is the inside of the config's pump section (default a short
	// backoff, "backoffInitial: 50ms, backoffMax: 1s": it only keeps the
	// retries after a fault quick).
	Pump string
}

// World is a feed on fresh services of one test: a PostgreSQL database, a
// mailbox database with the default tables, an in-process kfake broker
// with both topics (three partitions each), and its --config file (the
// test feed of SPEC §4, feedtest).
type World struct {
	Feed
	t testing.TB
	// Mailbox is a connection pool to the mailbox database.
	Mailbox *sql.DB
}

// NewWorld creates a world named name whose `export` and `ledger` run
// binary. Everything is removed when t ends.
func NewWorld(t testing.TB, name, binary string, opts WorldOptions) *World {
	t.Helper()
	if opts.BatchSize == 0 {
		opts.BatchSize = 8
	}
	if opts.PollInterval == "" {
		opts.PollInterval = "20ms"
	}
	if opts.Pump == "" {
		opts.Pump = "backoffInitial: 50ms, backoffMax: 1s"
	}
	w := &World{t: t, Feed: Feed{Name: name, Binary: binary, MailboxDSN: mailboxtest.NewMailbox(t), DatabaseDSN: pgtest.New(t),
		Brokers: kafkatest.New(t, StateTopic, NoticeTopic), StateTopic: StateTopic, NoticeTopic: NoticeTopic}}
	w.Config = feedtest.Feed{MailboxDSN: w.MailboxDSN, DatabaseDSN: w.DatabaseDSN, Brokers: w.Brokers,
		PollInterval: opts.PollInterval, BatchSize: opts.BatchSize, Pump: opts.Pump}.WriteConfig(t, strings.NewReplacer("@", "-", "/", "-").Replace(name))
	db, err := sql.Open("mysql", w.MailboxDSN)
	if err != nil {
		t.Fatalf("%s: open the mailbox: %v", name, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	w.Mailbox = db
	return w
}

// Put inserts the rows into the mailbox as the AODB would (mailboxtest.PutRows).
func (w *World) Put(rows []string, base time.Time) {
	w.t.Helper()
	mailboxtest.PutRows(w.t, w.Mailbox, w.Name, rows, base)
}

// Processed counts the mailbox rows that carry their result
// (mailboxtest.ProcessedRows).
func (w *World) Processed() int {
	w.t.Helper()
	return mailboxtest.ProcessedRows(w.t, w.Mailbox, w.Name)
}

// DayFlights is the number of flights of Day's schedule.
const DayFlights = 40

// Day is the simulator's day of n mailbox rows for the airport-local day
// in loc (`flightfeed simulate`'s generator): row 1 the RESP of the
// full-day schedule (DayFlights flights), then rounds of the day's traffic
// — a DNLD window push, a FLOP of every mapped kind, an ADFT, an FDEL and
// two malformed rows each — cut at n rows. The same arguments give the
// same rows.
func Day(day string, loc *time.Location, n int) []string {
	rows := []string{simulate.Response(simulate.Options{Day: day, Flights: DayFlights, Seed: 1, FirstSeqn: 1, Location: loc}).Body}
	for k := 0; len(rows) < n; k++ {
		for _, m := range simulate.Stream(simulate.Options{Day: day, Flights: DayFlights, Seed: uint64(k + 2),
			FirstSeqn: 1000 * (k + 1), Malformed: 2, Location: loc}) {
			rows = append(rows, m.Body)
		}
	}
	return rows[:n]
}

// Today is the test feed's operation day now (Asia/Shanghai): the day its
// full-day request asks for (requests.horizon {0, 0}), which Day's RESP
// must answer.
func Today(t testing.TB) (string, *time.Location) {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	return time.Now().In(loc).Format(time.DateOnly), loc
}
