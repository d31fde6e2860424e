// Command e2e is the end-to-end benchmark (`make bench`): it runs the
// built flightfeed binary as a user does — `flightfeed pump --config F
// --drain` on fresh PostgreSQL and MariaDB databases with an in-process
// kfake broker — and prints what a user would see:
//
//   - pgbench -c 1 -j 1 TPS, measured in the same run, with its default
//     TPC-B-like script and with -N (no updates of the small tables): the
//     ceiling of one transaction per message on this PostgreSQL;
//   - a 2,000-flight full-day RESP delivered to Kafka, then backlogs of
//     10,000 and 50,000 mixed FLOPs over those flights (each message
//     changes its flight): messages/s, its ratio to both pgbench figures,
//     the CPU microseconds per message of all processes together, the mailbox
//     span (first to last DATE_PROCESSED), the Kafka tail (last record
//     after the last DATE_PROCESSED) and the process's peak RSS;
//   - N reference-data messages of every type against N FLOPs, each a
//     drain of its own: both times and their ratio (-reference);
//   - a 9,999-flight RESP: its time and peak RSS;
//   - a steady stream at 50 messages/s through a running pump
//     (pollInterval 100ms): DATE_RECEIVED to the change notice read from
//     Kafka (read_committed), p50 and p99.
//
// Every backlog drain also prints what PostgreSQL wrote per message: the
// WAL of the feed's database (pg_walinspect), that of the whole server
// (pg_stat_wal, other databases included) and the backfill_todo rows it
// inserted (wal.go): counts that the machine's load does not move.
//
// Every drain is timed from the process's start to its exit, minus an
// empty drain of the same databases (process start, migration check,
// connections), and followed by its CPU seconds by process: the pump,
// PostgreSQL, MariaDB and this process's kfake (cpu.go). A backlog drain
// also prints them as CPU µs per message (less the empty drain's), with
// PostgreSQL's backends of the feed's database and MariaDB's threads of
// the feed's mailbox apart from the whole servers', the feed database's
// transaction and row counters and MariaDB's statement counters per
// message, and with -profile the pump profile's top 15 functions
// (perproc.go). The machine is shared: compare the ratio to pgbench, not
// the absolute figures.
//
//	go run ./hack/bench/e2e -bin bin/flightfeed [-backlogs 10000,50000] [-profile DIR]
package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/hack/bench/benchdb"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

type options struct {
	bin        string
	flights    int
	bigFlights int
	backlogs   []int
	// reference is how many reference-data messages (and as many FLOPs,
	// the baseline) referenceRun drains.
	reference int
	pgbench   time.Duration
	latency   time.Duration
	rate      int
	// latencyCSV is where the latency run writes each message's times.
	latencyCSV string
	batchSize  int
	// compression is kafka.compression ("" keeps the feed's default).
	compression string
	profile     string
	keep        bool
	stmtLog     string
	work        string
	// sweep are the flight counts of the RESP sweep (sweep.go), chart its
	// SVG file.
	sweep []int
	chart string
	// baseline is a second binary drained against bin round by round
	// (compare.go), rounds how many rounds.
	baseline string
	rounds   int
}

func main() {
	var o options
	var backlogs, sweepCounts string
	flag.StringVar(&o.bin, "bin", "bin/flightfeed", "the built flightfeed binary")
	flag.IntVar(&o.flights, "flights", 2000, "flights in the RESP before the backlogs")
	flag.IntVar(&o.bigFlights, "big-flights", 9999, "flights in the large RESP (0 skips it)")
	flag.StringVar(&backlogs, "backlogs", "10000,50000", "backlog sizes, drained one after another")
	flag.IntVar(&o.reference, "reference", 100, "reference-data messages drained against as many FLOPs (0 skips it)")
	flag.DurationVar(&o.pgbench, "pgbench", 10*time.Second, "pgbench duration")
	flag.DurationVar(&o.latency, "latency", 20*time.Second, "duration of the steady-rate latency run (0 skips it)")
	flag.IntVar(&o.rate, "rate", 50, "messages/s of the latency run")
	flag.StringVar(&o.latencyCSV, "latency-csv", "", "write each message of the latency run to this CSV file (with -baseline one file a run, FILE-cmp1b.csv for round 1's baseline and so on): id, FLID, and in µs since the epoch its DATE_RECEIVED, the start of the pump's transaction, the record's production and its consumption")
	flag.IntVar(&o.batchSize, "batch-size", 0, "mailbox.batchSize (0: the feed's default)")
	flag.StringVar(&o.compression, "compression", "", "kafka.compression: zstd, lz4 or none (empty: the feed's default)")
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of every pump run into this directory (pump --cpuprofile)")
	flag.StringVar(&o.stmtLog, "statement-log", "", "PostgreSQL's server log: log every statement of the feed's database (log_min_duration_statement 0) and print each drain's statements ranked by the backend's CPU (log_statement_stats), with their durations")
	flag.StringVar(&sweepCounts, "sweep", "", "flight counts of a RESP sweep, each on fresh databases (e.g. 500,1000,2000,4000,6000,8000,9999): a Markdown table of time against flights")
	flag.StringVar(&o.chart, "chart", "", "with -sweep: write the sweep as an SVG chart to this file")
	flag.BoolVar(&o.keep, "keep", false, "keep the databases and the pump logs (their names are printed)")
	flag.StringVar(&o.baseline, "baseline", "", "a baseline flightfeed binary (e.g. the previous release's, hack/bench/baseline.sh): instead of the full run, drain the first backlog with it and with -bin in alternation, fresh databases each, and print the medians and their ratios (with -latency not 0, the latency run follows each drain and its phases' medians are printed too); with -backlogs '' the full-day RESPs of -flights and -big-flights instead")
	flag.IntVar(&o.rounds, "rounds", 3, "with -baseline: rounds, each draining once with each binary (the order alternates)")
	flag.Parse()
	var err error
	if o.backlogs, err = counts("-backlogs", backlogs); err != nil {
		fatal(err)
	}
	if o.sweep, err = counts("-sweep", sweepCounts); err != nil {
		fatal(err)
	}
	if err := run(context.Background(), o); err != nil {
		fatal(err)
	}
}

// counts parses a flag's comma-separated positive numbers.
func counts(name, list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive number", name, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench e2e:", err)
	os.Exit(1)
}

func run(ctx context.Context, o options) error {
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s: %w (make build)", bin, err)
	}
	o.bin = bin
	if o.work, err = os.MkdirTemp("", "flightfeed-bench-"); err != nil {
		return err
	}
	if o.keep {
		fmt.Printf("kept: the pump logs and configs in %s\n", o.work)
	} else {
		defer os.RemoveAll(o.work)
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o750); err != nil {
			return err
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("flightfeed e2e benchmark  %s  load %s", time.Now().UTC().Format(time.RFC3339), load)

	var tps pgbenchRates
	if tps.tpcb, err = pgbenchTPS(ctx, o); err != nil {
		return err
	}
	if tps.noUpdates, err = pgbenchTPS(ctx, o, "-N"); err != nil {
		return err
	}
	fmt.Printf("pgbench -c 1 -j 1 -T %.0f: %.0f TPS (default TPC-B-like script), %.0f TPS with -N\n",
		o.pgbench.Seconds(), tps.tpcb, tps.noUpdates)
	if o.baseline != "" {
		return compare(ctx, o, tps)
	}

	// The 2,000-flight day and its backlogs, then the latency run on it.
	f, err := newFeed(ctx, o, "main")
	if err != nil {
		return err
	}
	defer f.close(ctx)
	empty, err := f.drain(ctx, "empty")
	if err != nil {
		return err
	}
	fmt.Printf("empty drain (start, connect, check, exit): %s, peak RSS %d MB\n  %s\n", ms(empty.took), empty.rssMB, empty.cpu)
	if _, err := f.resp(ctx, o.flights, empty); err != nil {
		return err
	}
	for _, n := range o.backlogs {
		if _, err := f.backlog(ctx, n, empty, tps); err != nil {
			return err
		}
	}
	if o.reference > 0 {
		if err := f.referenceRun(ctx, o.reference, empty); err != nil {
			return err
		}
	}
	if o.latency > 0 {
		if _, err := f.latencyRun(ctx); err != nil {
			return err
		}
	}
	if o.bigFlights > 0 {
		big, err := newFeed(ctx, o, "big")
		if err != nil {
			return err
		}
		defer big.close(ctx)
		bigEmpty, err := big.drain(ctx, "big-empty")
		if err != nil {
			return err
		}
		if _, err := big.resp(ctx, o.bigFlights, bigEmpty); err != nil {
			return err
		}
	}
	if len(o.sweep) > 0 {
		return sweep(ctx, o, tps)
	}
	return nil
}

// feed is one feed on its own fresh databases and broker.
type feed struct {
	o              options
	name           string
	config         string
	pgName, myName string
	pgDSN          string
	mbox           *sql.DB
	brokers        []string
	kafka          *kfake.Cluster
	day            string
	loc            *time.Location
	seqn           int
	// consumer reads both topics from the start, read_committed; read
	// counts what it read.
	consumer *kgo.Client
	read     kafkaRead
}

func newFeed(ctx context.Context, o options, name string) (*feed, error) {
	f := &feed{o: o, name: name, seqn: 1}
	suffix := fmt.Sprintf("bench_%s_%d", name, os.Getpid())
	f.pgName, f.myName = "ff_"+suffix, "ff_"+suffix+"_mbx"
	pdsn, err := benchdb.CreatePG(ctx, f.pgName)
	if err != nil {
		return nil, err
	}
	f.pgDSN = pdsn
	if o.stmtLog != "" {
		if err := logStatements(ctx, f.pgName); err != nil {
			return nil, err
		}
	}
	mdsn, err := benchdb.CreateMailbox(ctx, f.myName)
	if err != nil {
		return nil, err
	}
	if f.mbox, err = sql.Open("mysql", mdsn); err != nil {
		return nil, err
	}
	if f.kafka, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "KAFKA_SCHD", "KAFKA_MSG")); err != nil {
		return nil, fmt.Errorf("start kfake: %w", err)
	}
	f.brokers = f.kafka.ListenAddrs()
	ft := feedtest.Feed{MailboxDSN: mdsn, DatabaseDSN: pdsn, Brokers: f.brokers, PollInterval: "100ms", BatchSize: o.batchSize}
	if o.batchSize == 0 {
		ft.BatchSize = config.DefaultBatchSize
	}
	f.config = filepath.Join(o.work, name+".yaml")
	doc := ft.Config()
	if o.compression != "" {
		doc = strings.Replace(doc, "kafka: {", "kafka: {compression: "+o.compression+", ", 1)
	}
	if err := os.WriteFile(f.config, []byte(doc), 0o600); err != nil {
		return nil, err
	}
	f.loc, _ = time.LoadLocation("Asia/Shanghai")
	if f.loc == nil {
		f.loc = time.FixedZone("Asia/Shanghai", 8*3600)
	}
	f.day = time.Now().In(f.loc).Format(time.DateOnly)
	if f.consumer, err = newConsumer(f.brokers); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, o.bin, "migrate", "--config", f.config).CombinedOutput(); err != nil { //nolint:gosec // the binary under test
		return nil, fmt.Errorf("migrate: %w\n%s", err, out)
	}
	return f, nil
}

func (f *feed) close(ctx context.Context) {
	f.consumer.Close()
	f.kafka.Close()
	_ = f.mbox.Close()
	if f.o.keep {
		fmt.Printf("kept databases: PostgreSQL %s, MariaDB %s\n", f.pgName, f.myName)
		return
	}
	_ = benchdb.DropPG(ctx, f.pgName)
	_ = benchdb.DropMailbox(ctx, f.myName)
}

// run is one finished process.
type result struct {
	took  time.Duration
	rssMB int64
	// cpu is the drain's CPU seconds by process (cpuLine), cpuTotal their
	// sum.
	cpu      string
	cpuTotal time.Duration
	// procs is the CPU time by process (perproc.go).
	procs procCPU
	// wal is what PostgreSQL wrote during the drain (walProbe).
	wal *walProbe
	// before and after are the statement and row counters around the
	// drain; statements is how many the server's log showed (-statement-log).
	before, after counters
	statements    int
	// profile is the pump's CPU profile (-profile), "" without one.
	profile string
}

// drain runs `pump --drain` and times it from start to exit.
func (f *feed) drain(ctx context.Context, label string) (result, error) {
	args := []string{"pump", "--config", f.config, "--drain", "--identity", "bench"}
	var profile string
	if f.o.profile != "" {
		profile = filepath.Join(f.o.profile, f.name+"-"+label+".pprof")
		args = append(args, "--cpuprofile", profile)
	}
	logPath := filepath.Join(f.o.work, f.name+"-"+label+".log")
	logf, err := os.Create(logPath) //nolint:gosec // our own temporary directory
	if err != nil {
		return result{}, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, f.o.bin, args...) //nolint:gosec // the binary under test
	cmd.Stdout, cmd.Stderr = logf, logf
	logFrom := f.statementLogEnd()
	wal := f.startWAL(ctx)
	countersBefore := f.readCounters(ctx)
	backends := watchBackends(f.pgName)
	threads := f.watchMailbox(ctx)
	before := sampleCPU()
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	feedMy, threadsErr := threads.finish()
	if threadsErr != nil {
		fmt.Printf("  (the mailbox's MariaDB threads: %v)\n", threadsErr)
	}
	procs := procCPU{pump: processCPU(cmd.ProcessState), feedPG: backends.finish(), feedMy: feedMy}
	after := sampleCPU()
	cpu, cpuTotal := cpuLine(&procs, before, after, took)
	wal.finish(ctx)
	countersAfter := f.readCounters(ctx)
	if err != nil {
		out, _ := os.ReadFile(logPath) //nolint:gosec // our own temporary directory
		return result{}, fmt.Errorf("pump --drain (%s): %w\n%s", label, err, tail(string(out), 20))
	}
	var statements int
	if f.o.stmtLog != "" {
		if statements, err = printStatements(f.o.stmtLog, logFrom, f.pgName, label); err != nil {
			return result{}, err
		}
	}
	return result{took: took, rssMB: maxRSS(cmd.ProcessState) / 1024, cpu: cpu, cpuTotal: cpuTotal, procs: procs, wal: wal,
		before: countersBefore, after: countersAfter, statements: statements, profile: profile}, nil
}

func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss // KB on Linux
	}
	return 0
}

func (f *feed) opts(flights int) simulate.Options {
	return simulate.Options{Day: f.day, Flights: flights, Seed: 1, FirstSeqn: f.seqn, Location: f.loc}
}

// resp puts a full-day RESP of n flights and drains it.
func (f *feed) resp(ctx context.Context, n int, empty result) (result, error) {
	opts := f.opts(n)
	f.seqn++
	if err := f.put(ctx, []simulate.Message{simulate.Response(opts)}); err != nil {
		return result{}, err
	}
	r, err := f.drain(ctx, fmt.Sprintf("resp%d", n))
	if err != nil {
		return result{}, err
	}
	k, err := f.readKafka(ctx, n, 0)
	if err != nil {
		return result{}, err
	}
	if k.state < n {
		return result{}, fmt.Errorf("RESP of %d flights: %d state records in Kafka", n, k.state)
	}
	fmt.Printf("RESP %5d flights to Kafka: %s (process %s), %d state + %d notice records, peak RSS %d MB\n",
		n, ms(r.took-empty.took), ms(r.took), k.state, k.notice, r.rssMB)
	fmt.Printf("  %s\n", r.cpu)
	r.took -= empty.took
	r.cpuTotal -= empty.cpuTotal
	return r, nil
}

// backlog puts n FLOPs over the day's flights and drains them.
func (f *feed) backlog(ctx context.Context, n int, empty result, tps pgbenchRates) (drainFigures, error) {
	msgs := simulate.Backlog(f.opts(f.o.flights), n)
	f.seqn += n
	var first int64
	if err := f.mbox.QueryRowContext(ctx, "SELECT COALESCE(MAX(CMINMSGS_ID), 0) + 1 FROM CMINMSGS").Scan(&first); err != nil {
		return drainFigures{}, err
	}
	if err := f.put(ctx, msgs); err != nil {
		return drainFigures{}, err
	}
	r, err := f.drain(ctx, fmt.Sprintf("backlog%d", n))
	if err != nil {
		return drainFigures{}, err
	}
	var ok int
	var firstDone, lastDone time.Time
	if err := f.mbox.QueryRowContext(ctx, `SELECT COUNT(*), MIN(CMINMSGS_DATE_PROCESSED), MAX(CMINMSGS_DATE_PROCESSED)
		FROM CMINMSGS WHERE CMINMSGS_ID >= ? AND CMINMSGS_PROC_RESULT = 'SUCCEEDED'`, first).Scan(&ok, &firstDone, &lastDone); err != nil {
		return drainFigures{}, err
	}
	if ok != n {
		return drainFigures{}, fmt.Errorf("backlog of %d: %d rows SUCCEEDED", n, ok)
	}
	k, err := f.readKafka(ctx, 0, n)
	if err != nil {
		return drainFigures{}, err
	}
	if k.notice < n {
		return drainFigures{}, fmt.Errorf("backlog of %d: %d notices in Kafka", n, k.notice)
	}
	took := r.took - empty.took
	rate := float64(n) / took.Seconds()
	if took <= 0 {
		// The drain less the empty drain (start, connect, exit) is what
		// the messages took; a backlog drained faster than the two
		// process starts differ has no time of its own to show.
		rate = math.NaN()
		fmt.Printf("backlog %6d FLOPs: not timed: the process took %s, the empty drain %s (too small a backlog for the start's spread); mailbox span %s; Kafka tail %s; peak RSS %d MB\n",
			n, ms(r.took), ms(empty.took), ms(lastDone.Sub(firstDone)), ms(k.last.Sub(lastDone)), r.rssMB)
	} else {
		fmt.Printf("backlog %6d FLOPs: %s (process %s) = %.0f msgs/s = %.1fx pgbench (%.1fx pgbench -N); mailbox span %s; Kafka tail %s; peak RSS %d MB\n",
			n, ms(took), ms(r.took), rate, rate/tps.tpcb, rate/tps.noUpdates, ms(lastDone.Sub(firstDone)), ms(k.last.Sub(lastDone)), r.rssMB)
	}
	fmt.Printf("  %s; %.0f µs CPU a message, all processes (less the empty drain's CPU)\n", r.cpu, (r.cpuTotal-empty.cpuTotal).Seconds()*1e6/float64(n))
	fmt.Println(cpuTable(r.procs, empty.procs, n))
	fmt.Printf("  %s\n", r.wal.line(n))
	fmt.Printf("  %s\n", r.wal.relationsLine(n))
	fmt.Printf("  %s\n", r.wal.kindsLine(n))
	fmt.Printf("  %s\n", countersLine(r.before, r.after, n, r.statements))
	if r.profile != "" {
		fmt.Println(profileTop(ctx, f.o.bin, r.profile))
	}
	d := r.procs.sub(empty.procs)
	perMsg := func(t time.Duration) float64 { return float64(t.Microseconds()) / float64(n) }
	return drainFigures{rate: rate, all: (r.cpuTotal - empty.cpuTotal).Seconds() * 1e6 / float64(n),
		pump: perMsg(d.pump), feedPG: perMsg(d.feedPG), feedMy: perMsg(d.feedMy),
		walRecords: float64(r.wal.mine) / float64(n), walBytes: float64(r.wal.mineBytes) / float64(n)}, nil
}

// drainFigures are a backlog drain's figures per message: its rate, CPU
// µs of all processes and of the pump, the feed's PostgreSQL backends and
// the mailbox's MariaDB threads, and the feed database's WAL.
type drainFigures struct {
	rate, all, pump, feedPG, feedMy float64
	walRecords, walBytes            float64
}

// put writes messages to the inbound table, DATE_RECEIVED now plus 1 µs a
// message (the FIFO order is the slice's), 1,000 rows a statement.
func (f *feed) put(ctx context.Context, msgs []simulate.Message) error {
	base := time.Now().UTC()
	const chunk = 1000
	for start := 0; start < len(msgs); start += chunk {
		end := min(start+chunk, len(msgs))
		rows := make([]mailbox.Inbound, 0, end-start)
		for i := start; i < end; i++ {
			rows = append(rows, mailbox.Inbound{Received: base.Add(time.Duration(i) * time.Microsecond), Body: msgs[i].Body})
		}
		if _, err := mailbox.WriteInbound(ctx, f.mbox, rows...); err != nil {
			return fmt.Errorf("fill the mailbox: %w", err)
		}
	}
	return nil
}

// kafkaRead is what readKafka found since its last call.
type kafkaRead struct {
	state, notice int
	last          time.Time
}

// readKafka reads the records committed since the last call until it has
// read at least wantState state and wantNotice notice records, or none
// came for 15 s. A consumer that falls short is replaced by a fresh one
// reading from the start (kfake's read_committed fetches were seen to
// stall a consumer under load); only what that one misses is missing.
func (f *feed) readKafka(ctx context.Context, wantState, wantNotice int) (kafkaRead, error) {
	k, err := f.consume(ctx, wantState, wantNotice)
	if err != nil || (k.state >= wantState && k.notice >= wantNotice) {
		return k, err
	}
	fmt.Printf("  (the Kafka consumer stalled after %d state and %d notice records; reading again with a fresh one)\n", k.state, k.notice)
	f.consumer.Close()
	if f.consumer, err = newConsumer(f.brokers); err != nil {
		return k, err
	}
	before := f.read
	f.read = kafkaRead{}
	all, err := f.consume(ctx, before.state+wantState, before.notice+wantNotice)
	return kafkaRead{state: all.state - before.state, notice: all.notice - before.notice, last: all.last}, err
}

func newConsumer(brokers []string) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("KAFKA_SCHD", "KAFKA_MSG"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(50*time.Millisecond))
}

func (f *feed) consume(ctx context.Context, wantState, wantNotice int) (kafkaRead, error) {
	var k kafkaRead
	quiet := time.Now()
	for k.state < wantState || k.notice < wantNotice || time.Since(quiet) < 200*time.Millisecond {
		if time.Since(quiet) > 15*time.Second {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := f.consumer.PollFetches(pctx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			quiet = time.Now()
			if r.Topic == "KAFKA_SCHD" {
				k.state++
			} else {
				k.notice++
			}
			if r.Timestamp.After(k.last) {
				k.last = r.Timestamp
			}
		})
		for _, e := range fetches.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				return k, fmt.Errorf("read Kafka: %w", e.Err)
			}
		}
	}
	f.read.state += k.state
	f.read.notice += k.notice
	return k, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[cmp.Or(min(i, len(sorted))-1, 0)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+)`)

// pgbenchRates are the two pgbench baselines of a run.
type pgbenchRates struct {
	// tpcb is the default TPC-B-like script, noUpdates the same with -N.
	tpcb, noUpdates float64
}

// pgbenchTPS runs pgbench -c 1 -j 1 with script (none: the default
// TPC-B-like one; "-N") on a fresh database.
func pgbenchTPS(ctx context.Context, o options, script ...string) (float64, error) {
	name := fmt.Sprintf("ff_bench_pgbench_%d", os.Getpid())
	dsn, err := benchdb.CreatePG(ctx, name)
	if err != nil {
		return 0, err
	}
	defer func() { _ = benchdb.DropPG(ctx, name) }()
	if out, err := exec.CommandContext(ctx, "pgbench", "-i", "-q", dsn).CombinedOutput(); err != nil { //nolint:gosec // our own database
		return 0, fmt.Errorf("pgbench -i: %w\n%s", err, out)
	}
	args := append([]string{"-c", "1", "-j", "1", "-T", strconv.Itoa(int(o.pgbench.Seconds()))}, script...)
	out, err := exec.CommandContext(ctx, "pgbench", append(args, dsn)...).CombinedOutput() //nolint:gosec // our own database
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w\n%s", err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no tps in pgbench output:\n%s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// logStatements makes PostgreSQL log every statement of database name
// with its duration.
func logStatements(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, pgtest.Server())
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	for _, set := range []string{"log_min_duration_statement = 0", "log_statement_stats = on"} {
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" SET "+set); err != nil {
			return err
		}
	}
	return nil
}

var (
	// statsLine and statsUsage are log_statement_stats' report of one
	// protocol step (parse, bind, execute, or a simple query); the
	// STATEMENT line after it names the statement.
	statsLine    = regexp.MustCompile(`LOG:  (?:[A-Z]+ )*STATISTICS$`)
	statsUsage   = regexp.MustCompile(`!\s+([0-9.]+) s user, ([0-9.]+) s system, [0-9.]+ s elapsed`)
	statementOf  = regexp.MustCompile(`STATEMENT:  (.*)$`)
	logLineStart = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	durationLine = regexp.MustCompile(`duration: ([0-9.]+) ms\s+(statement|execute|parse|bind)[^:]*: ?(.*)$`)
)

// statementLogEnd is where the server's log (-statement-log) ends now:
// printStatements reads a run's statements from there (0 without the
// option, or when the log cannot be read).
func (f *feed) statementLogEnd() int64 {
	if f.o.stmtLog == "" {
		return 0
	}
	st, err := os.Stat(f.o.stmtLog)
	if err != nil {
		return 0
	}
	return st.Size()
}

// printStatements sums, per statement (its first 90 characters,
// whitespace folded; parse, bind and execute together), the durations and
// the CPU time (log_statement_stats: the backend's user + system time)
// PostgreSQL logged for database db from offset on, and prints the top 15
// by CPU.
func printStatements(path string, offset int64, db, label string) (int, error) {
	f, err := os.Open(path) //nolint:gosec // the server's log, named by the user
	if err != nil {
		return 0, fmt.Errorf("-statement-log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return 0, err
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		return 0, err
	}
	type sum struct {
		ms, cpu float64
		calls   int
	}
	sums := map[string]*sum{}
	var totalMS, totalCPU float64
	// An entry runs from one log line to the next: a duration (its
	// statement's text continues on the following lines), the DETAIL of a
	// statistics report (its usage on the following lines), or the
	// STATEMENT line that names what the report was about.
	const (
		none = iota
		duration
		usage
		statement
	)
	kind, pendingCPU := none, -1.0
	var ms, cpu float64
	counted := false // the duration line is a run (statement, execute), not a parse or bind
	var text strings.Builder
	flush := func() {
		if kind == duration || kind == statement {
			key := strings.Join(strings.Fields(text.String()), " ")
			key = key[:min(len(key), 90)]
			if sums[key] == nil {
				sums[key] = &sum{}
			}
			if kind == duration {
				// The extended protocol logs a duration for each of
				// parse, bind and execute: they add up to the
				// statement's time, but it ran once.
				sums[key].ms += ms
				if counted {
					sums[key].calls++
				}
				totalMS += ms
			} else {
				sums[key].cpu += cpu
				totalCPU += cpu
			}
		}
		kind = none
		text.Reset()
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if logLineStart.MatchString(line) {
			flush()
			if !strings.Contains(line, "@"+db+" ") {
				pendingCPU = -1
				continue
			}
			if statsLine.MatchString(line) {
				pendingCPU = -1
				continue
			}
			if strings.Contains(line, " DETAIL:  ! system usage stats:") {
				kind = usage
				continue
			}
			if m := statementOf.FindStringSubmatch(line); m != nil && pendingCPU >= 0 {
				kind, cpu = statement, pendingCPU
				text.WriteString(m[1])
				pendingCPU = -1
				continue
			}
			if m := durationLine.FindStringSubmatch(line); m != nil {
				kind = duration
				ms, _ = strconv.ParseFloat(m[1], 64)
				counted = m[2] == "statement" || m[2] == "execute"
				text.WriteString(m[3])
			}
			continue
		}
		switch kind {
		case usage:
			if m := statsUsage.FindStringSubmatch(line); m != nil && pendingCPU < 0 {
				u, _ := strconv.ParseFloat(m[1], 64)
				sy, _ := strconv.ParseFloat(m[2], 64)
				pendingCPU = 1000 * (u + sy)
			}
		case duration, statement:
			if text.Len() < 400 {
				text.WriteString(" " + line)
			}
		}
	}
	flush()
	keys := slices.Collect(maps.Keys(sums))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(sums[b].cpu, sums[a].cpu) })
	fmt.Printf("  PostgreSQL statements of %s: %.3f s in all, %.3f s CPU (log_statement_stats)\n", label, totalMS/1000, totalCPU/1000)
	for _, k := range keys[:min(15, len(keys))] {
		fmt.Printf("  %8.3f s %7.3f s CPU %6d  %s\n", sums[k].ms/1000, sums[k].cpu/1000, sums[k].calls, k)
	}
	calls := 0
	for _, s := range sums {
		calls += s.calls
	}
	return calls, nil
}
