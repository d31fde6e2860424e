//go:build reliability

package faults_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/faultproxy"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// messages is the size of the day every scenario drains (about 75
// transactions of mailbox.batchSize 8).
const messages = 600

// strikes are the shares of the rows processed (percent) at which a
// repeated fault strikes.
func strikes() []int {
	if full() {
		return []int{10, 25, 40, 55, 70, 85}
	}
	return []int{20, 45, 70}
}

// Outage lengths. Kafka's is the 30 s; the others only need to
// outlast several of the pump's retries (backoffMax 1s).
const (
	kafkaOutage = 30 * time.Second
	// kafkaLatency is added to every request to the broker while slow.
	kafkaLatency = 2 * time.Second
	// mailboxTimeout is the mailbox DSN's readTimeout and writeTimeout in
	// the MariaDB stall scenarios.
	mailboxTimeout = 2 * time.Second
)

// scenario is one faulted drain of the workload, compared at the end with
// the clean reference.
type scenario struct {
	t      *testing.T
	name   string
	w      *world
	p      *proctest.Proc
	runs   int
	faults int
	notes  []string
}

func newScenario(t *testing.T, name string) *scenario {
	t.Helper()
	return newScenarioWith(t, name, 0)
}

// newScenarioWith is newScenario with the pump's mailbox DSN's
// readTimeout and writeTimeout set to mailboxTimeout (0: none).
func newScenarioWith(t *testing.T, name string, mailboxTimeout time.Duration) *scenario {
	t.Helper()
	return newScenarioOpts(t, name, worldOptions{mailboxTimeout: mailboxTimeout})
}

// newScenarioOpts is newScenario on a world shaped by opts.
func newScenarioOpts(t *testing.T, name string, opts worldOptions) *scenario {
	t.Helper()
	t.Parallel()
	reference(t) // built once; fails early when the clean run does
	s := &scenario{t: t, name: name, w: newWorld(t, name, opts), runs: 1}
	s.p = s.w.drain()
	return s
}

func (s *scenario) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// end waits for the drain, compares the outcome with the reference and
// records the summary.
func (s *scenario) end() {
	t := s.t
	t.Helper()
	s.p.Finish()
	r := check.Compare(reference(t), check.Read(t, s.w.Feed))
	r.Assert(t, s.name)
	check.Record(t, check.Summary{Scenario: "faults/" + s.name, Runs: s.runs, Faults: s.faults, Messages: messages, Counts: r.Counts})
	t.Logf("%s: %s", s.name, strings.Join(s.notes, "; "))
}

// cutOnce arms inspect to return verdict for the next chunk that match
// accepts, once, and waits until it did.
func (s *scenario) cutOnce(px *faultproxy.Proxy, what string, match func([]byte) bool, verdict faultproxy.Verdict) {
	s.t.Helper()
	s.cutOnceChunk(px, what, func(c faultproxy.Chunk) bool { return match(c.Data) }, verdict)
}

// inTransaction matches the first chunk a PostgreSQL connection sends
// after its "begin" (the statement that takes pipeline_lock in a write
// transaction: a pump batch, seldom a request's bookkeeping), and nothing
// of the dispatcher's or the epoch renewal's, which run without BEGIN. A
// matcher on statement text would miss: pgx prepares a statement once per
// connection and later sends only its name.
func inTransaction() func(faultproxy.Chunk) bool {
	var mu sync.Mutex
	begun := map[int64]bool{}
	return func(c faultproxy.Chunk) bool {
		mu.Lock()
		defer mu.Unlock()
		if len(c.Data) > 5 && c.Data[0] == 'Q' && strings.HasPrefix(strings.ToLower(string(c.Data[5:])), "begin") {
			begun[c.Conn] = true
			return false
		}
		if begun[c.Conn] {
			delete(begun, c.Conn)
			return true
		}
		return false
	}
}

// cutOnceChunk is cutOnce with a matcher that sees the connection too.
func (s *scenario) cutOnceChunk(px *faultproxy.Proxy, what string, match func(faultproxy.Chunk) bool, verdict faultproxy.Verdict) {
	s.t.Helper()
	var fired atomic.Bool
	px.SetInspector(func(c faultproxy.Chunk) faultproxy.Verdict {
		if !fired.Load() && match(c) && fired.CompareAndSwap(false, true) {
			return verdict
		}
		return faultproxy.Forward
	})
	await.EventuallyEvery(s.t, s.name+": "+what, waitLong, poll, func() (bool, string) {
		if s.p.Exited() {
			s.t.Fatalf("%s: the pump exited (%v) before %s", s.name, s.p.Err(), what)
		}
		return fired.Load(), ""
	})
	px.SetInspector(nil)
	s.faults++
}

// strikeEach runs fault at every strike point of the drain.
func (s *scenario) strikeEach(fault func(at int)) {
	s.t.Helper()
	for _, pct := range strikes() {
		fault(s.w.waitProcessed(s.p, messages*pct/100))
	}
}

// retriesHeld waits, once the pump has reported the mailbox unreachable,
// for n more of its connection attempts to reach the proxy (attempts reads
// the proxy's counter), and requires proc_state not to move meanwhile:
// the head waits while the pump retries. Both ends are events (the report,
// the n-th attempt), not a length of time.
func (s *scenario) retriesHeld(attempts func() int64, n int64) {
	s.t.Helper()
	before, from := s.w.applied(), attempts()
	await.EventuallyEvery(s.t, fmt.Sprintf("%s: %d more connection attempts of the pump", s.name, n), waitLong, poll, func() (bool, string) {
		if s.p.Exited() {
			s.t.Fatalf("%s: `pump --drain` ended (%v) while the mailbox was unreachable", s.name, s.p.Err())
		}
		got := attempts() - from
		return got >= n, fmt.Sprintf("%d attempts", got)
	})
	if after := s.w.applied(); after != before {
		s.t.Errorf("%s: %d messages applied while the mailbox was unreachable (%d at the pump's report, %d after %d more attempts): the head did not wait",
			s.name, after-before, before, after, n)
	}
	s.note("head held at %d applied over %d connection attempts", before, n)
}

// mailboxBack waits for the pump to say the mailbox answers again and
// requires the failed attempts it counted over the outage to be at least
// want: it retried rather than waiting out the outage in silence. (The
// proxy's count of connections is not the pump's count of attempts: the
// drain check and the driver's own retries open connections too.)
func (s *scenario) mailboxBack(want int) {
	s.t.Helper()
	l := s.p.WaitLog("the mailbox reachable again", "mailbox reachable again", func(logLine) bool { return true })
	failures, err := strconv.Atoi(fmt.Sprint(l["failures"]))
	if err != nil || failures < want {
		s.t.Errorf("%s: the pump counted %v failed mailbox attempts over the outage (%v), want at least %d", s.name, l["failures"], err, want)
	}
	s.note("mailbox reachable again after %s, %d failed attempts", l.Str("after"), failures)
}

// downReports is how many times a pump must report a failed attempt at
// the head before an outage ends: the retries are what is checked, not how
// long the outage lasted.
const downReports = 3

// reports waits until the pump has logged msg n times after the first
// skip lines of it (those before the fault), every one matching match,
// and returns them; a drain that ended first fails the test.
func (s *scenario) reports(msg string, skip, n int, match func(logLine) bool) []logLine {
	s.t.Helper()
	var got []logLine
	await.EventuallyEvery(s.t, fmt.Sprintf("%s: %d %q lines", s.name, n, msg), waitLong, poll, func() (bool, string) {
		if s.p.Exited() {
			s.t.Fatalf("%s: `pump --drain` ended (%v) before reporting %q %d times", s.name, s.p.Err(), msg, n)
		}
		got = s.p.Logs(msg)[skip:]
		for i, l := range got {
			if !match(l) {
				s.t.Fatalf("%s: %q line %d after the fault is not the one expected: %v", s.name, msg, i+1, l)
			}
		}
		return len(got) >= n, fmt.Sprintf("%d lines", len(got))
	})
	return got
}

// errorMentions is a log-line matcher: an error naming one of words.
func errorMentions(words ...string) func(logLine) bool {
	return func(l logLine) bool {
		e := l.Str("error")
		for _, w := range words {
			if strings.Contains(e, w) {
				return true
			}
		}
		return false
	}
}

func TestPostgres(t *testing.T) {
	// A connection reset in the middle of a batch (a statement that is not
	// its COMMIT): the batch rolls back and is retried whole.
	t.Run("reset-mid-batch", func(t *testing.T) {
		s := newScenario(t, "postgres/reset-mid-batch")
		before := len(s.p.Logs("batch rolled back"))
		s.strikeEach(func(at int) {
			s.cutOnceChunk(s.w.pg, "a statement inside a transaction cut", inTransaction(), faultproxy.Cut)
			s.note("cut at %d", at)
		})
		s.p.WaitLog("a rolled-back batch", "batch rolled back", func(logLine) bool { return len(s.p.Logs("batch rolled back")) > before })
		s.end()
	})

	// The COMMIT reaches the server and is carried out, its answer never
	// reaches the pump: the pump must take the batch for failed, read
	// proc_state again and find its messages done, and apply nothing twice
	// (Compare counts a change under more versions than the clean run's as
	// duplicated).
	t.Run("lost-commit-ack", func(t *testing.T) {
		s := newScenario(t, "postgres/lost-commit-ack")
		s.strikeEach(func(at int) {
			s.cutOnce(s.w.pg, "a COMMIT forwarded and its acknowledgement lost", faultproxy.PostgresCommit, faultproxy.ForwardThenCut)
			s.note("COMMIT ack lost at %d", at)
		})
		s.end()
		// Evidence: batches the pump took for rolled back at COMMIT whose
		// head message the database has as done, once.
		var heads []string
		for _, l := range s.p.Logs("batch rolled back") {
			if strings.Contains(l.Str("error"), "commit:") {
				heads = append(heads, fmt.Sprint(l["msg_id"]))
			}
		}
		if len(heads) == 0 {
			t.Fatalf("%s: no batch failed at its COMMIT: every lost acknowledgement hit another transaction; the scenario proves nothing", s.name)
		}
		var committed int
		s.w.pgQuery(func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, `SELECT count(*) FROM proc_state WHERE message_id::text = ANY($1)
				AND status IN ('SUCCEEDED', 'SKIPPED', 'DEAD') AND attempts = 1`, heads).Scan(&committed)
		})
		if committed != len(heads) {
			t.Errorf("%s: of the %d batches whose COMMIT acknowledgement was lost (heads %v), %d have their head done in one attempt",
				s.name, len(heads), heads, committed)
		}
		t.Logf("%s: %d batch(es) lost their COMMIT acknowledgement (heads %v); each head applied once", s.name, len(heads), heads)
	})

	// PostgreSQL down (the port refused, live connections reset): the pump
	// says which dependency and why, and that its head waits. Checked on
	// what the pump reports, not on proc_state (nothing can be applied
	// through a refused port, whatever the pump does): it rolls the batch
	// back for the connection, again and again with backoff, every time at
	// the same head message.
	t.Run("down", func(t *testing.T) {
		s := newScenario(t, "postgres/down")
		at := s.w.waitProcessed(s.p, messages/2)
		before := len(s.p.Logs("batch rolled back"))
		down(t, s.w.pg)
		s.faults++
		rolled := s.reports("batch rolled back", before, downReports,
			errorMentions("connect", "refused", "reset", "EOF", "closed"))
		pass(t, s.w.pg)
		heads := map[string]int{}
		for _, l := range rolled {
			heads[fmt.Sprint(l["msg_id"])]++
		}
		if len(heads) != 1 {
			t.Errorf("%s: while PostgreSQL was down the pump rolled back batches at %d heads (msg_id: times %v): its head moved", s.name, len(heads), heads)
		}
		s.note("down at %d: %d batches rolled back at head %v: %q", at, len(rolled), heads, rolled[0].Str("error"))
		s.end()
	})

	// PostgreSQL stalls (nothing forwarded, connections held): no call
	// fails and the server's statement_timeout cannot answer through it.
	// The head blocks, the pump says the database is not answering (a call
	// unanswered for pump.DatabaseStallAfter) and which call waits; once it
	// answers again, the pump says so and the drain ends where the clean
	// run does.
	t.Run("stall", func(t *testing.T) {
		s := newScenario(t, "postgres/stall")
		at := s.w.waitProcessed(s.p, messages/2)
		if err := s.w.pg.SetMode(faultproxy.Stall); err != nil {
			t.Fatal(err)
		}
		s.faults++
		// What the pump reports (proc_state cannot move through a stalled
		// proxy, whatever the pump does): the head waits, on which call,
		// unanswered for at least pump.DatabaseStallAfter by its own clock.
		l := s.p.WaitLog("the stalled database reported", "database not answering; the head waits",
			func(l logLine) bool { return l.Str("call") != "" && l.Str("for") != "" })
		if waited, err := time.ParseDuration(l.Str("for")); err != nil || waited < pump.DatabaseStallAfter {
			t.Errorf("%s: the pump reported the database not answering for %q (%v), want at least %s", s.name, l.Str("for"), err, pump.DatabaseStallAfter)
		}
		pass(t, s.w.pg)
		s.p.WaitLog("the database answering again", "database answering again", func(logLine) bool { return true })
		s.note("stalled at %d: reported after %s with %q in progress", at, l.Str("for"), l.Str("call"))
		s.end()
	})
}

func TestMariaDB(t *testing.T) {
	headRead := func(b []byte) bool {
		q, ok := faultproxy.MySQLQuery(b)
		return ok && strings.HasPrefix(q, "SELECT") && strings.Contains(q, "CMINMSGS") && strings.Contains(q, "LIMIT")
	}
	writeBack := func(b []byte) bool {
		q, ok := faultproxy.MySQLQuery(b)
		return ok && strings.HasPrefix(q, "UPDATE") && strings.Contains(q, "CMINMSGS")
	}
	// A connection cut under the driver: go-sql-driver's ErrInvalidConn,
	// database/sql's ErrBadConn, or the socket's own error.
	connLost := []string{"invalid connection", "bad connection", "connection reset", "broken pipe", "EOF"}
	mailboxDown := func(s *scenario, op string) logLine {
		return s.p.WaitLog("the mailbox reported unreachable at "+op, "mailbox unreachable; the head waits with backoff", func(l logLine) bool {
			return strings.Contains(l.Str("error"), op) && errorMentions(connLost...)(l)
		})
	}
	for _, tc := range []struct {
		name  string
		match func([]byte) bool
		// op is how the pump's error names the cut call (internal/mailbox).
		op string
	}{{"head-read", headRead, "read mailbox head"}, {"write-back", writeBack, "results back (intents kept for retry): backfill"}} {
		t.Run("reset-"+tc.name, func(t *testing.T) {
			s := newScenario(t, "mariadb/reset-"+tc.name)
			s.strikeEach(func(at int) {
				s.cutOnce(s.w.mysql, "the "+tc.name+" cut", tc.match, faultproxy.Cut)
				s.note("cut at %d", at)
			})
			l := mailboxDown(s, tc.op)
			s.note("the pump: %q", l.Str("error"))
			s.end()
		})
		t.Run("stall-"+tc.name, func(t *testing.T) {
			// With the driver's readTimeout and writeTimeout on the
			// mailbox DSN, a stalled mailbox is an error the pump reports
			// (without them a stalled connection waits for ever, as a
			// stalled PostgreSQL one does).
			s := newScenarioWith(t, "mariadb/stall-"+tc.name, mailboxTimeout)
			at := s.w.waitProcessed(s.p, messages/2)
			px := s.w.mysql
			// The proxy stalls at the next matching chunk, before it is
			// forwarded.
			var stalled atomic.Bool
			px.SetInspector(func(c faultproxy.Chunk) faultproxy.Verdict {
				if tc.match(c.Data) && stalled.CompareAndSwap(false, true) {
					_ = px.SetMode(faultproxy.Stall)
				}
				return faultproxy.Forward
			})
			await.EventuallyEvery(t, s.name+": the stall", waitLong, poll, func() (bool, string) { return stalled.Load(), "" })
			px.SetInspector(nil)
			s.faults++
			l := s.p.WaitLog("the stalled mailbox reported", "mailbox unreachable; the head waits with backoff",
				errorMentions("timeout", "invalid connection", "bad connection"))
			// Each attempt times out on a stalled connection and the next
			// one opens a new connection, which the proxy accepts and holds.
			s.retriesHeld(func() int64 { return px.Stats().Accepted }, downReports)
			s.note("stalled at the %s near %d: %q", tc.name, at, l.Str("error"))
			pass(t, px)
			// A stalled attempt lasts mailboxTimeout: two attempts of the
			// pump's are its first report and at least one retry.
			s.mailboxBack(2)
			s.end()
		})
	}
	// The mailbox down: its port refused and live connections reset. Once
	// the pump has reported it, the proxy listens again and resets every
	// connection at once, so that it can count the pump's retries.
	t.Run("down", func(t *testing.T) {
		s := newScenario(t, "mariadb/down")
		at := s.w.waitProcessed(s.p, messages/2)
		down(t, s.w.mysql)
		s.faults++
		l := s.p.WaitLog("the mailbox reported unreachable", "mailbox unreachable; the head waits with backoff",
			errorMentions("connection refused", "invalid connection", "bad connection", "connection reset", "EOF"))
		if err := s.w.mysql.SetMode(faultproxy.Reset); err != nil {
			t.Fatal(err)
		}
		s.retriesHeld(func() int64 { return s.w.mysql.Stats().Resets }, downReports)
		pass(t, s.w.mysql)
		s.mailboxBack(downReports)
		s.note("down at %d: %q", at, l.Str("error"))
		s.end()
	})
}

func TestKafka(t *testing.T) {
	// The broker unreachable for 30 s: the pump keeps applying (Kafka is
	// not on its path: events wait in the outbox), the drain does not end
	// while events are undelivered, the dispatcher says why, and everything
	// is delivered once the broker answers.
	t.Run("unreachable", func(t *testing.T) {
		s := newScenario(t, "kafka/unreachable-30s")
		at := s.w.waitProcessed(s.p, messages*30/100)
		down(t, s.w.kafka)
		s.faults++
		since := time.Now()
		// One counter before and after: messages committed in proc_state
		// (the mailbox's processed rows lag it by the write-back, so
		// comparing the two would pass on a batch committed before the
		// outage and written back during it).
		before := s.w.applied()
		l := s.p.WaitLog("the dispatcher failing", "", func(l logLine) bool {
			return l.Str("logger") == "dispatch" && l.Str("level") == "error"
		})
		for time.Since(since) < kafkaOutage {
			if s.p.Exited() {
				t.Fatalf("%s: `pump --drain` ended (%v) while the broker was unreachable", s.name, s.p.Err())
			}
			time.Sleep(100 * time.Millisecond)
		}
		applied, pending := s.w.applied(), s.w.PendingEvents()
		if applied <= before {
			t.Errorf("%s: no message applied while Kafka was unreachable (%d at the start, %d at the end): Kafka is on the pump's path", s.name, before, applied)
		}
		if pending == 0 {
			t.Fatalf("%s: no event pending after the outage: it proves nothing", s.name)
		}
		pass(t, s.w.kafka)
		s.note("unreachable at %d rows for %s; %d applied at its start, %d at its end, %d events pending; the dispatcher: %s %q",
			at, kafkaOutage, before, applied, pending, l.Str("msg"), l.Str("error"))
		s.end()
	})

	// Every request to the broker 2 s late: slow is not down, and nothing
	// is lost or reordered. Not a bound on how fast it delivers (a figure:
	// the notes say how many events a late pass delivered): the delivered
	// cursor moves twice while every request is late, the first move
	// perhaps a pass whose requests left before the latency, the second a
	// pass whose every request was late. The moves are waited for as
	// events; waitLong only ends a drain that is stuck.
	t.Run("slow", func(t *testing.T) {
		s := newScenario(t, "kafka/slow")
		at := s.w.waitProcessed(s.p, messages*20/100)
		s.w.kafka.SetLatency(kafkaLatency)
		s.faults++
		before := s.w.delivered()
		moved := func(from int) int {
			var now int
			await.EventuallyEvery(t, fmt.Sprintf("%s: the delivered cursor past %d with every request %s late", s.name, from, kafkaLatency), waitLong, poll, func() (bool, string) {
				if s.p.Exited() {
					t.Fatalf("%s: `pump --drain` ended (%v) while the broker was slow", s.name, s.p.Err())
				}
				now = s.w.delivered()
				return now > from, fmt.Sprintf("cursor %d, %d events pending: slow became down", now, s.w.PendingEvents())
			})
			return now
		}
		first := moved(before)
		delayed := s.w.kafka.Stats().Delayed
		second := moved(first)
		s.w.kafka.SetLatency(0)
		if got := s.w.kafka.Stats().Delayed; got <= delayed {
			t.Fatalf("%s: no request to the broker was delayed between the cursor's moves (%d delayed before, %d after): the scenario proves nothing", s.name, delayed, got)
		}
		s.note("slow from %d rows: delivered cursor %d -> %d -> %d, %d requests delayed by %s", at, before, first, second, s.w.kafka.Stats().Delayed, kafkaLatency)
		s.end()
	})
}

// down makes the proxy's dependency unreachable: its port refused and
// every live connection reset.
func down(t *testing.T, px *faultproxy.Proxy) {
	t.Helper()
	if err := px.SetMode(faultproxy.Refuse); err != nil {
		t.Fatal(err)
	}
	px.ResetAll()
}

func pass(t *testing.T, px *faultproxy.Proxy) {
	t.Helper()
	if err := px.SetMode(faultproxy.Pass); err != nil {
		t.Fatal(err)
	}
}
