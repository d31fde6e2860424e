package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/simulate"
)

// latencyMessage is what the latency run learns of one message, each time
// on this machine's clock: written to the mailbox (its DATE_RECEIVED), the
// start of the pump's transaction that applied it (its processing row's
// updated_at: the pump's clock when it began the transaction, after the
// head read that found the row and the decoding), its change notice
// produced (the Kafka record's timestamp, which the producer sets when
// the dispatcher hands the record over after reading its outbox window; in
// milliseconds) and its notice read by a read_committed consumer.
type latencyMessage struct {
	id                                  int64
	flid                                string
	received, began, produced, consumed time.Time
}

// latencyPhases are the parts of a message's latency the run can tell
// from outside the pump, in the order they follow each other.
var latencyPhases = []struct {
	name string
	of   func(m latencyMessage) time.Duration
}{
	{"mailbox -> pump's transaction (poll wait, head read, decode)", func(m latencyMessage) time.Duration { return m.began.Sub(m.received) }},
	{"transaction -> record produced (apply, commit, dispatcher wake, window read)", func(m latencyMessage) time.Duration { return m.produced.Sub(m.began) }},
	{"record produced -> consumed (Kafka transaction commit, read_committed fetch)", func(m latencyMessage) time.Duration { return m.consumed.Sub(m.produced) }},
	{"total: DATE_RECEIVED -> change notice consumed", func(m latencyMessage) time.Duration { return m.consumed.Sub(m.received) }},
}

// latencyFigures are one latency run's figures: p50, p99 and max of each
// phase (latencyPhases' order) and the CPU the run cost per message.
type latencyFigures struct {
	p50, p99, max []time.Duration
	// cpu: the pump process (start to exit), the feed's PostgreSQL
	// backends and the mailbox's MariaDB threads, µs per message.
	pump, feedPG, feedMy float64
}

// latencyRun runs the pump (not draining) and writes one FLOP every
// 1/rate s, each to another flight, DATE_RECEIVED set as it is written;
// the latency of a message is its change notice's arrival at a
// read_committed consumer minus its DATE_RECEIVED. It prints the
// percentiles of the whole and of each phase (latencyPhases) and the CPU
// the run cost.
func (f *feed) latencyRun(ctx context.Context) (latencyFigures, error) {
	if _, err := f.readKafka(ctx, 0, 0); err != nil {
		return latencyFigures{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logPath := filepath.Join(f.o.work, f.name+"-latency.log")
	logf, err := os.Create(logPath) //nolint:gosec // our own temporary directory
	if err != nil {
		return latencyFigures{}, err
	}
	defer logf.Close()
	args := []string{"pump", "--config", f.config, "--identity", "bench"}
	if f.o.profile != "" {
		args = append(args, "--cpuprofile", filepath.Join(f.o.profile, f.name+"-latency.pprof"))
	}
	logFrom := f.statementLogEnd()
	backends := watchBackends(f.pgName)
	threads := f.watchMailbox(ctx)
	// Stopped by SIGTERM below, not by a context.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), f.o.bin, args...) //nolint:gosec // the binary under test
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return latencyFigures{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		return <-exited
	}
	time.Sleep(2 * time.Second) // started, requests sent, idle

	// One message a flight, so a notice's key names its message.
	n := min(int(f.o.latency.Seconds()*float64(f.o.rate)), f.o.flights)
	var msgs []simulate.Message
	flidOf := regexp.MustCompile(`<FLID>(\d+)</FLID>`)
	taken := map[string]bool{}
	for _, m := range simulate.Backlog(f.opts(f.o.flights), 10*f.o.flights) {
		if flid := flidOf.FindStringSubmatch(m.Body)[1]; !taken[flid] && len(msgs) < n {
			taken[flid] = true
			msgs = append(msgs, m)
		}
	}
	f.seqn += 10 * f.o.flights
	var sent latencyLog
	consumed := make(chan map[string]kafkaSeen, 1)
	go func() { consumed <- f.consumeNotices(ctx, len(msgs)) }()
	tick := time.NewTicker(time.Second / time.Duration(f.o.rate))
	defer tick.Stop()
	for _, m := range msgs {
		<-tick.C
		now := time.Now()
		id, err := mailbox.WriteInbound(ctx, f.mbox, mailbox.Inbound{Received: now, Body: m.Body})
		if err != nil {
			_ = stop()
			return latencyFigures{}, err
		}
		sent.add(latencyMessage{id: id, flid: flidOf.FindStringSubmatch(m.Body)[1], received: now})
	}
	seen := <-consumed
	if err := stop(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return latencyFigures{}, err
		}
	}
	feedMy, threadsErr := threads.finish()
	if threadsErr != nil {
		fmt.Printf("  (the mailbox's MariaDB threads: %v)\n", threadsErr)
	}
	feedPG := backends.finish()
	if f.o.stmtLog != "" {
		// Every statement of the run, the 2 s idle start included: at a
		// steady rate each batch holds about one message, so this is
		// what a batch costs the backend.
		if _, err := printStatements(f.o.stmtLog, logFrom, f.pgName, "latency"); err != nil {
			return latencyFigures{}, err
		}
	}
	if len(seen) < len(msgs) {
		out, _ := os.ReadFile(logPath) //nolint:gosec // our own temporary directory
		return latencyFigures{}, fmt.Errorf("latency run: %d notices of %d messages\n%s", len(seen), len(msgs), tail(string(out), 20))
	}
	all, err := f.latencyMessages(ctx, sent.msgs, seen)
	if err != nil {
		return latencyFigures{}, err
	}
	if path := f.o.latencyCSV; path != "" {
		if f.o.baseline != "" {
			// One file a run: FILE-NAME.csv, NAME the round's feed
			// (cmp1b: round 1, baseline).
			path = strings.TrimSuffix(path, ".csv") + "-" + f.name + ".csv"
		}
		if err := writeLatencyCSV(path, all); err != nil {
			return latencyFigures{}, err
		}
	}
	perMsg := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(len(all)) }
	figs := latencyFigures{pump: perMsg(processCPU(cmd.ProcessState)), feedPG: perMsg(feedPG), feedMy: perMsg(feedMy)}
	for _, ph := range latencyPhases {
		d := make([]time.Duration, len(all))
		for i, m := range all {
			d[i] = ph.of(m)
		}
		slices.Sort(d)
		figs.p50, figs.p99, figs.max = append(figs.p50, pct(d, 50)), append(figs.p99, pct(d, 99)), append(figs.max, d[len(d)-1])
	}
	last := len(latencyPhases) - 1
	fmt.Printf("latency at %d msgs/s (%d messages, pollInterval 100ms): DATE_RECEIVED -> change notice p50 %s, p99 %s, max %s; peak RSS %d MB\n",
		f.o.rate, len(all), ms(figs.p50[last]), ms(figs.p99[last]), ms(figs.max[last]), maxRSS(cmd.ProcessState)/1024)
	fmt.Printf("  by phase (ms; the phases' percentiles do not add up to the total's):  %8s %8s %8s\n", "p50", "p99", "max")
	for i, ph := range latencyPhases[:last] {
		fmt.Printf("    %-76s %8.1f %8.1f %8.1f\n", ph.name, msf(figs.p50[i]), msf(figs.p99[i]), msf(figs.max[i]))
	}
	fmt.Printf("  CPU µs per message over the run (the pump's from start to exit, 2 s idle included): pump %.0f, the feed's PostgreSQL backends %.0f, the mailbox's MariaDB threads %.0f\n",
		figs.pump, figs.feedPG, figs.feedMy)
	return figs, nil
}

// latencyLog is the messages written so far (the consumer reads it while
// they are written).
type latencyLog struct {
	mu   sync.Mutex
	msgs []latencyMessage
}

func (l *latencyLog) add(m latencyMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, m)
}

// kafkaSeen is a change notice as the consumer read it.
type kafkaSeen struct{ produced, consumed time.Time }

// consumeNotices reads KAFKA_MSG until it has seen want flights' notices
// (or nothing came for 10 s) and returns each flight's first notice.
func (f *feed) consumeNotices(ctx context.Context, want int) map[string]kafkaSeen {
	seen := map[string]kafkaSeen{}
	for len(seen) < want && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		fetches := f.consumer.PollFetches(pctx)
		pcancel()
		now := time.Now()
		got := 0
		fetches.EachRecord(func(r *kgo.Record) {
			if _, dup := seen[string(r.Key)]; r.Topic != "KAFKA_MSG" || dup {
				return
			}
			seen[string(r.Key)] = kafkaSeen{produced: r.Timestamp, consumed: now}
			got++
		})
		if got == 0 && fetches.Empty() && pctx.Err() != nil {
			break
		}
	}
	return seen
}

// latencyMessages joins what was sent with what was consumed (by FLID)
// and with the processing rows' transaction start (by message id).
func (f *feed) latencyMessages(ctx context.Context, sent []latencyMessage, seen map[string]kafkaSeen) ([]latencyMessage, error) {
	conn, err := pgx.Connect(ctx, f.pgDSN)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	ids := make([]int64, len(sent))
	for i, m := range sent {
		ids[i] = m.id
	}
	rows, err := conn.Query(ctx, `SELECT message_id, updated_at FROM proc_state WHERE message_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read the processing rows: %w", err)
	}
	began := map[int64]time.Time{}
	var id int64
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error { began[id] = at; return nil }); err != nil {
		return nil, fmt.Errorf("read the processing rows: %w", err)
	}
	out := make([]latencyMessage, 0, len(sent))
	for _, m := range sent {
		k, ok := seen[m.flid]
		b, processed := began[m.id]
		if !ok || !processed {
			return nil, fmt.Errorf("message %d (FLID %s): notice read %v, processing row %v", m.id, m.flid, ok, processed)
		}
		m.began, m.produced, m.consumed = b, k.produced, k.consumed
		out = append(out, m)
	}
	return out, nil
}

// writeLatencyCSV writes each message's times (µs since the epoch) to
// path: id, FLID, received, began, produced, consumed.
func writeLatencyCSV(path string, msgs []latencyMessage) error {
	fh, err := os.Create(path) //nolint:gosec // the path the user asked for
	if err != nil {
		return err
	}
	w := csv.NewWriter(fh)
	_ = w.Write([]string{"message_id", "flid", "received_us", "began_us", "produced_us", "consumed_us"})
	us := func(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }
	for _, m := range msgs {
		_ = w.Write([]string{strconv.FormatInt(m.id, 10), m.flid, us(m.received), us(m.began), us(m.produced), us(m.consumed)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		_ = fh.Close()
		return err
	}
	return fh.Close()
}

// msf is d in milliseconds.
func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
