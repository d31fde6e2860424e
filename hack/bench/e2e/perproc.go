package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// procCPU is a drain's CPU time by process.
type procCPU struct {
	// pump is the pump process's own (rusage at exit).
	pump time.Duration
	// postgres is the whole server's: every backend (the pump's and any
	// other database's, reaped ones included), autovacuum, checkpointer
	// and WAL writer. feedPG is only the backends connected to the feed's
	// database, as dbBackends last saw them: a lower bound (a backend's
	// last ≤ 100 ms before it exits with the pump are not seen).
	postgres, feedPG time.Duration
	// mariadb is mariadbd's, which serves every database on the server;
	// feedMy only the threads of the connections to the feed's mailbox.
	mariadb, feedMy time.Duration
	// broker is this process's: the in-process kfake broker, the Kafka
	// consumer and the probes' own sampling.
	broker time.Duration
}

func (c procCPU) total() time.Duration { return c.pump + c.postgres + c.mariadb + c.broker }

func (c procCPU) sub(d procCPU) procCPU {
	return procCPU{pump: c.pump - d.pump, postgres: c.postgres - d.postgres, feedPG: c.feedPG - d.feedPG,
		mariadb: c.mariadb - d.mariadb, feedMy: c.feedMy - d.feedMy, broker: c.broker - d.broker}
}

// dbBackends follows the CPU time of the PostgreSQL backends connected to
// one database (their process title names it) while a drain runs, by
// reading /proc every interval: the postmaster reaps a backend that exits
// and adds its time to its own cutime, which mixes every database's.
type dbBackends struct {
	db   string
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	// first and last are each backend's CPU time when first and last seen;
	// born are those that were not there at the start.
	first, last map[int]time.Duration
	born        map[int]bool
	started     bool
}

const backendInterval = 100 * time.Millisecond

func watchBackends(db string) *dbBackends {
	b := &dbBackends{db: db, stop: make(chan struct{}), done: make(chan struct{}),
		first: map[int]time.Duration{}, last: map[int]time.Duration{}, born: map[int]bool{}}
	b.sample() // the backends already there count from now
	b.started = true
	go func() {
		defer close(b.done)
		t := time.NewTicker(backendInterval)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				b.sample()
				return
			case <-t.C:
				b.sample()
			}
		}
	}()
	return b
}

func (b *dbBackends) sample() {
	title := []byte(" " + b.db + " ")
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range dirs {
		raw, err := os.ReadFile(path) //nolint:gosec // procfs
		if err != nil {
			continue
		}
		comm, fields, ok := parseStat(raw)
		if !ok || comm != "postgres" {
			continue
		}
		dir := filepath.Dir(path)
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline")) //nolint:gosec // procfs
		if err != nil || !bytes.Contains(cmdline, title) {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(filepath.Base(dir), &pid); err != nil {
			continue
		}
		cpu := ticks(fields[11]) + ticks(fields[12])
		b.mu.Lock()
		if _, seen := b.first[pid]; !seen {
			if b.started {
				b.first[pid] = 0 // born during the drain: all its time is the drain's
				b.born[pid] = true
			} else {
				b.first[pid] = cpu
			}
		}
		b.last[pid] = cpu
		b.mu.Unlock()
	}
}

// finish stops the sampling, waits (up to 2 s) until the backends that
// were born during the drain have exited, so that the postmaster has reaped
// them and a sampleCPU after it counts their time, and returns the
// backends' CPU time since the start.
func (b *dbBackends) finish() time.Duration {
	close(b.stop)
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		alive := false
		for pid := range b.born {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				alive = true
				break
			}
		}
		if !alive {
			break
		}
	}
	return b.sum()
}

func (b *dbBackends) sum() time.Duration {
	var sum time.Duration
	for pid, last := range b.last {
		sum += last - b.first[pid]
	}
	return sum
}

// counters are the statement and row counters a drain moves: the feed's
// database in PostgreSQL (pg_stat_database; pg_stat_statements needs
// shared_preload_libraries, which the local server does not load) and the
// MariaDB server's Com_* statement counters (server-wide: every database's
// statements, this process's probes included).
type counters struct {
	pg  map[string]int64
	my  map[string]int64
	err error
}

var pgCounters = []string{"xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted", "blks_hit", "blks_read"}

func (f *feed) readCounters(ctx context.Context) counters {
	c := counters{pg: map[string]int64{}, my: map[string]int64{}}
	conn, err := pgx.Connect(ctx, f.pgDSN)
	if err != nil {
		c.err = err
		return c
	}
	defer func() { _ = conn.Close(ctx) }()
	// A fresh snapshot of the statistics (a session caches them for its
	// transaction otherwise).
	if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		c.err = err
		return c
	}
	vals := make([]int64, len(pgCounters))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := conn.QueryRow(ctx, "SELECT "+strings.Join(pgCounters, ", ")+" FROM pg_stat_database WHERE datname = current_database()").Scan(ptrs...); err != nil {
		c.err = err
		return c
	}
	for i, k := range pgCounters {
		c.pg[k] = vals[i]
	}
	rows, err := f.mbox.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Com\\_%' OR Variable_name IN ('Questions', 'Innodb_rows_updated', 'Innodb_rows_read', 'Innodb_rows_inserted')")
	if err != nil {
		c.err = err
		return c
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var name string
		var v sql.NullInt64
		if err := rows.Scan(&name, &v); err != nil {
			c.err = err
			return c
		}
		c.my[name] = v.Int64
	}
	c.err = rows.Err()
	return c
}

// countersLine prints what changed from before to after, per message.
func countersLine(before, after counters, n int, statements int) string {
	if before.err != nil || after.err != nil {
		return fmt.Sprintf("counters: not measured: %v %v", before.err, after.err)
	}
	per := func(d int64) string { return fmt.Sprintf("%.3f", float64(d)/float64(n)) }
	var pg []string
	for _, k := range pgCounters {
		pg = append(pg, k+" "+per(after.pg[k]-before.pg[k]))
	}
	var my []string
	keys := make([]string, 0, len(after.my))
	for k := range after.my {
		if after.my[k] != before.my[k] {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		return after.my[keys[i]]-before.my[keys[i]] > after.my[keys[j]]-before.my[keys[j]]
	})
	for _, k := range keys {
		my = append(my, fmt.Sprintf("%s %d (%s)", k, after.my[k]-before.my[k], per(after.my[k]-before.my[k])))
	}
	stmts := "PostgreSQL statements per message: not counted (pg_stat_statements is not loaded by this server; -statement-log counts them from the server's log)"
	if statements > 0 {
		stmts = fmt.Sprintf("PostgreSQL statements per message (the server's log): %s", per(int64(statements)))
	}
	return fmt.Sprintf("%s\n  PostgreSQL per message, this database (pg_stat_database): %s\n  MariaDB statements, server-wide (SHOW GLOBAL STATUS deltas, total and per message): %s",
		stmts, strings.Join(pg, ", "), strings.Join(my, ", "))
}

// cpuTable prints a drain's CPU µs per message by process, less the empty
// drain's (process start, connections, exit).
func cpuTable(c, empty procCPU, n int) string {
	d := c.sub(empty)
	us := func(t time.Duration) string { return fmt.Sprintf("%8.1f", float64(t.Microseconds())/float64(n)) }
	var b strings.Builder
	fmt.Fprintf(&b, "  CPU µs per message, less the empty drain: %8s  %8s  %8s  %8s  %8s  %8s  %8s\n", "pump", "postgres", "(feed db)", "mariadb", "(mailbox)", "broker", "all")
	fmt.Fprintf(&b, "  %-41s %s  %s  %s  %s  %s  %s  %s", "", us(d.pump), us(d.postgres), us(d.feedPG), us(d.mariadb), us(d.feedMy), us(d.broker), us(d.total()))
	return b.String()
}

// profileTop prints the top functions of a pump CPU profile (go tool
// pprof -top), or why not.
func profileTop(ctx context.Context, bin, path string) string {
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=15", bin, path).CombinedOutput() //nolint:gosec // our own profile
	if err != nil {
		return fmt.Sprintf("pprof %s: %v\n%s", path, err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	// Keep the summary and the table, not the file and build lines.
	for i, l := range lines {
		if strings.HasPrefix(l, "Showing nodes") || strings.HasPrefix(l, "Duration:") {
			lines = lines[i:]
			break
		}
	}
	return "  pump CPU profile " + path + ":\n    " + strings.Join(lines, "\n    ")
}

// mailboxThreads follows the CPU time of the MariaDB server threads that
// serve connections to the feed's mailbox database while a drain runs:
// every thread's time is taken at the start, the connections' thread ids
// (information_schema.PROCESSLIST.TID) are polled during the drain, and
// their time is read again at once after it (a thread outlives its
// connection in the server's thread cache).
type mailboxThreads struct {
	pid   string
	start map[int]time.Duration
	tids  map[int]bool
	stop  chan struct{}
	done  chan struct{}
	err   error
}

// mariadbPID returns the pid of the mariadbd process, "" if none.
func mariadbPID() string {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range dirs {
		raw, err := os.ReadFile(path) //nolint:gosec // procfs
		if err != nil {
			continue
		}
		if comm, _, ok := parseStat(raw); ok && (comm == "mariadbd" || comm == "mysqld") {
			return filepath.Base(filepath.Dir(path))
		}
	}
	return ""
}

// threadCPU reads the CPU time of every thread of process pid.
func threadCPU(pid string) map[int]time.Duration {
	out := map[int]time.Duration{}
	dirs, _ := filepath.Glob("/proc/" + pid + "/task/[0-9]*/stat")
	for _, path := range dirs {
		raw, err := os.ReadFile(path) //nolint:gosec // procfs
		if err != nil {
			continue
		}
		_, fields, ok := parseStat(raw)
		if !ok {
			continue
		}
		var tid int
		if _, err := fmt.Sscan(filepath.Base(filepath.Dir(path)), &tid); err == nil {
			out[tid] = ticks(fields[11]) + ticks(fields[12])
		}
	}
	return out
}

func (f *feed) watchMailbox(ctx context.Context) *mailboxThreads {
	t := &mailboxThreads{pid: mariadbPID(), tids: map[int]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	if t.pid == "" {
		t.err = fmt.Errorf("no mariadbd process on this machine")
		close(t.done)
		return t
	}
	t.start = threadCPU(t.pid)
	poll := func() {
		rows, err := f.mbox.QueryContext(ctx, "SELECT TID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", f.myName)
		if err != nil {
			t.err = err
			return
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var tid sql.NullInt64
			if rows.Scan(&tid) == nil && tid.Valid {
				t.tids[int(tid.Int64)] = true
			}
		}
		if err := rows.Err(); err != nil {
			t.err = err
		}
	}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(backendInterval)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				poll()
			}
		}
	}()
	return t
}

// finish returns the CPU time the mailbox's connections' threads used
// since the start.
func (t *mailboxThreads) finish() (time.Duration, error) {
	if t.pid == "" {
		return 0, t.err
	}
	end := threadCPU(t.pid)
	close(t.stop)
	<-t.done
	var sum time.Duration
	for tid := range t.tids {
		sum += end[tid] - t.start[tid]
	}
	return sum, t.err
}
