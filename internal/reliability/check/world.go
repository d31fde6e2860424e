package check

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// The topics of the test feed (feedtest).
const (
	StateTopic  = "KAFKA_SCHD"
	NoticeTopic = "KAFKA_MSG"
)

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
// returns its standard output (proctest.RunCommand).
func (f Feed) Run(t testing.TB, command string, args ...string) string {
	t.Helper()
	return proctest.RunCommand(t, f.Name, f.Binary, f.Config, command, args...)
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
	// Brokers, when set, is the feed's Kafka broker (default a fresh
	// kfake broker of kafkatest).
	Brokers []string
}

// World is a feed on fresh services of one test (proctest.World: a
// PostgreSQL database, a mailbox database with the default tables, a kfake
// broker with both topics, three partitions each, and its --config file)
// and the Feed that Read collects its outcome from.
type World struct {
	*proctest.World
	Feed Feed
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
	w := proctest.NewWorld(t, name, binary, proctest.WorldOptions{Feed: feedtest.Feed{
		PollInterval: opts.PollInterval, BatchSize: opts.BatchSize, Pump: opts.Pump}, Brokers: opts.Brokers})
	return &World{World: w, Feed: Feed{Name: name, Binary: binary, Config: w.Config, MailboxDSN: w.MailboxDSN,
		DatabaseDSN: w.DatabaseDSN, Brokers: w.Brokers, StateTopic: StateTopic, NoticeTopic: NoticeTopic}}
}

// CleanRun is a scenario's reference: rows (row i received at base + i
// ms) drained by one `flightfeed pump --drain` of binary on a fresh world,
// its outcome read into memory (its services may go with the test that
// happened to make it), refused when it is not want (Validate), when its
// contents differ from the workload's pinned outcome (Expected.CheckPinned:
// each row's result, note, processing record and notice count, each
// flight's document, the ledger) or when it is not consistent itself
// (Self).
func CleanRun(t testing.TB, binary string, rows []string, base time.Time, want Expected) (Outcome, error) {
	t.Helper()
	clean := NewWorld(t, "clean", binary, WorldOptions{})
	clean.Put(rows, base)
	p := clean.Start("clean", true, nil, "--drain")
	if err := p.Wait(); err != nil {
		return Outcome{}, fmt.Errorf("clean drain: %w\n%s", err, proctest.Tail(p.Output(), 40))
	}
	ref := Read(t, clean.Feed)
	if err := Validate(ref, want); err != nil {
		return Outcome{}, err
	}
	if err := want.CheckPinned(ref); err != nil {
		return Outcome{}, err
	}
	if r := Self(ref); !r.OK() {
		return Outcome{}, fmt.Errorf("the clean run is not consistent itself: %v", r.Problems)
	}
	return ref, nil
}

// DayFlights is the number of flights of Day's schedule.
const DayFlights = 40

// Day is the simulator's day of n mailbox rows for the airport-local day
// in loc (proctest.Workload of DayFlights flights): row 1 the RESP of the
// full-day schedule, then rounds of the day's traffic — a DNLD window
// push, a FLOP of every mapped kind, an ADFT, an FDEL and two malformed
// rows each — cut at n rows. The same arguments give the same rows.
func Day(day string, loc *time.Location, n int) []string {
	var rows []string
	for _, m := range dayMessages(day, loc, n) {
		rows = append(rows, m.Body)
	}
	return rows
}

func dayMessages(day string, loc *time.Location, n int) []simulate.Message {
	msgs := []simulate.Message{simulate.Response(simulate.Options{Day: day, Flights: DayFlights, Seed: 1, FirstSeqn: 1, Location: loc})}
	for k := 0; len(msgs) < n; k++ {
		msgs = append(msgs, proctest.Messages(day, loc, DayFlights, k, k+1)...)
	}
	return msgs[:n]
}

// Expected is what a clean drain of a Day must leave, read off the
// workload itself (the generator's labels and FLIDs), never off a run: a
// defect the clean and the faulted run share then fails the reference
// instead of comparing equal.
type Expected struct {
	// Rows is the number of mailbox rows, each processed.
	Rows int
	// Dead are the mailbox row ids (the i-th row inserted has id i) whose
	// result is DEAD, and no other row's is: the malformed rows.
	Dead []int64
	// Flights are the FLIDs the export holds: those the RESP, a DNLD window
	// push (it upserts) or the ad-hoc ADFT put in, less those an FDEL
	// deleted after.
	Flights []string
	// Ledger maps each operation day to its version: the RESP answers the
	// one full-day request (the feed's horizon is today), version 1; the
	// DNLD window pushes do not advance it.
	Ledger map[string]int64
	// mask writes the workload's day and FLIDs relative to the day (for
	// Pinned).
	mask dayMask
}

var flidTag = regexp.MustCompile(`<FLID>(\d+)</FLID>`)

// ExpectDay is the Expected of Day(day, loc, n).
func ExpectDay(day string, loc *time.Location, n int) Expected {
	e := Expected{Rows: n, Ledger: map[string]int64{day: 1}}
	flights := map[string]bool{}
	msgs := dayMessages(day, loc, n)
	e.mask = newDayMask(day, loc, firstFLID(msgs[0].Body))
	for i, m := range msgs {
		var flids []string
		for _, f := range flidTag.FindAllStringSubmatch(m.Body, -1) {
			flids = append(flids, f[1])
		}
		switch {
		case strings.HasPrefix(m.What, "malformed"):
			e.Dead = append(e.Dead, int64(i+1))
		case strings.HasPrefix(m.What, "RESP"), strings.HasPrefix(m.What, "DNLD"), strings.HasPrefix(m.What, "ADFT"):
			for _, f := range flids {
				flights[f] = true
			}
		case m.What == "FDEL":
			for _, f := range flids {
				delete(flights, f)
			}
		}
	}
	e.Flights = sortedKeys(flights)
	return e
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
