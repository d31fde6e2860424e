package faults_test

import (
	"testing"
	"time"
)

// The workload of every scenario: a full-day RESP of 40 flights, then
// eight rounds of the day's traffic (a DNLD window push, 74 FLOPs, an
// ADFT, an FDEL, two malformed rows each) — 633 mailbox rows, about 80
// transactions of mailbox.batchSize 8.
const (
	workloadFlights = 40
	workloadRounds  = 8
)

// scenario is one fault test: the same rows in two fresh worlds, a clean
// `pump --drain` on one (running in the background while the fault is
// played on the other) and a faulted drain on the other.
type scenario struct {
	t              *testing.T
	rows           int
	clean, faulted *world
	cleanPump      *pumpProc
}

func newScenario(t *testing.T) *scenario {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	// Today, airport-local: the day the pump's full-day request asks for
	// (requests.horizon {0, 0}), which the RESP of row 1 answers.
	day := time.Now().In(loc).Format(time.DateOnly)
	rows := workload(day, loc, workloadFlights, workloadRounds)
	base := time.Now().UTC().Truncate(time.Second)
	s := &scenario{t: t, rows: len(rows), clean: newWorld(t, "clean"), faulted: newWorld(t, "faulted")}
	s.clean.put(rows, base)
	s.faulted.put(rows, base)
	s.cleanPump = s.clean.startPump()
	return s
}

// at is the number of processed rows a fault waits for: part of the total.
func (s *scenario) at(percent int) int { return s.rows * percent / 100 }

// converge waits for the clean drain and requires the faulted world to
// have ended exactly where the clean one did.
func (s *scenario) converge() {
	t := s.t
	t.Helper()
	s.cleanPump.finish()
	clean, faulted := s.clean.outcome(), s.faulted.outcome()

	// The clean run is the reference; it must show the workload did
	// something of every kind, and be consistent itself.
	results := map[string]int{}
	for _, r := range clean.mailbox {
		results[r.Result]++
	}
	if len(clean.mailbox) != s.rows || results["SUCCEEDED"] == 0 || results["DEAD"] == 0 ||
		len(clean.ledger) == 0 || len(clean.export) == 0 || len(clean.outboxNotices) == 0 {
		t.Fatalf("the clean run proves too little: %d mailbox rows of %d, results %v, %d ledger lines, %d flights, %d notices",
			len(clean.mailbox), s.rows, results, len(clean.ledger), len(clean.export), len(clean.outboxNotices))
	}
	checkTopics(t, "clean run", clean)
	checkTopics(t, "faulted run", faulted)
	compareOutcomes(t, clean, faulted)
	t.Logf("%d rows (%v), %d flights, ledger %v; %s records: clean %d, faulted %d; %s records: clean %d, faulted %d (%d notices committed)",
		s.rows, results, len(clean.export), clean.ledger, stateTopic, len(clean.state), len(faulted.state),
		noticeTopic, len(clean.notice), len(faulted.notice), len(clean.outboxNotices))
}

// TestFaultPumpKilled: the pump is killed with SIGKILL in the middle of
// the drain, with no chance to clean up whatever it was doing (a
// transaction in flight, results not yet written back to the mailbox,
// events not yet delivered); a new `pump --drain` finishes the job.
func TestFaultPumpKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("slow fault scenario")
	}
	t.Parallel()
	s := newScenario(t)

	p := s.faulted.startPump()
	p.waitProcessed(s.at(40), s.rows)
	p.kill()
	atKill := s.faulted.processed()
	if atKill >= s.rows {
		t.Fatalf("every row was processed before the kill landed: the test proves nothing")
	}
	pending := s.faulted.pendingEvents()

	s.faulted.startPump().finish()
	s.converge()
	t.Logf("killed with %d of %d rows processed and %d events pending", atKill, s.rows, pending)
}

// faultPoints are the shares of the rows processed (in percent) at which
// the session faults strike.
var faultPoints = []int{15, 30, 45, 60, 75}

// strike runs fault each time the drain p reaches one of faultPoints and
// returns what the faults did; at least one must have ended a session of
// the pump.
func (s *scenario) strike(p *pumpProc, what string, fault func() cut) []cut {
	s.t.Helper()
	var cuts []cut
	total := 0
	for _, percent := range faultPoints {
		at := p.waitProcessed(s.at(percent), s.rows)
		c := fault()
		c.atRow = at
		cuts = append(cuts, c)
		total += c.sessions
	}
	if total == 0 {
		s.t.Fatalf("no %s of the pump was ended (%v): the test proves nothing", what, cuts)
	}
	return cuts
}

// TestFaultPostgresSessionsTerminated: every PostgreSQL session of the
// pump is terminated (pg_terminate_backend) five times during the drain.
func TestFaultPostgresSessionsTerminated(t *testing.T) {
	if testing.Short() {
		t.Skip("slow fault scenario")
	}
	t.Parallel()
	s := newScenario(t)

	p := s.faulted.startPump()
	cuts := s.strike(p, "PostgreSQL session", s.faulted.terminatePostgres)
	p.finish()
	s.converge()
	t.Logf("terminated the pump's PostgreSQL sessions: %v", cuts)
}

// TestFaultMailboxSessionsKilled: every MariaDB session of the pump on
// the mailbox database is killed (KILL id) five times during the drain.
func TestFaultMailboxSessionsKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("slow fault scenario")
	}
	t.Parallel()
	s := newScenario(t)

	p := s.faulted.startPump()
	cuts := s.strike(p, "mailbox session", s.faulted.killMailboxSessions)
	p.finish()
	s.converge()
	t.Logf("killed the pump's mailbox sessions: %v", cuts)
}

// kafkaOutage is how long the broker stays down.
const kafkaOutage = 20 * time.Second

// TestFaultKafkaDown: the broker goes down for twenty seconds during the
// drain and comes back on the same address with its topics and records.
// The pump keeps applying the mailbox meanwhile (Kafka is not on its
// path), the drain does not end while events are undelivered, and the
// dispatcher delivers everything once the broker is back.
func TestFaultKafkaDown(t *testing.T) {
	if testing.Short() {
		t.Skip("slow fault scenario")
	}
	t.Parallel()
	s := newScenario(t)

	p := s.faulted.startPump()
	p.waitProcessed(s.at(30), s.rows)
	s.faulted.broker.stop()
	downSince := time.Now()
	atStop := s.faulted.processed()
	if atStop >= s.rows {
		t.Fatalf("every row was processed before the broker went down: the test proves nothing")
	}

	// The outage: the drain must not end while the broker is away (the
	// rows processed from now on queue events no one can deliver).
	for time.Since(downSince) < kafkaOutage {
		if p.exited() {
			t.Fatalf("`pump --drain` ended (%v) while the broker was down, %s into the outage, with %d events pending",
				p.err, time.Since(downSince).Round(time.Millisecond), s.faulted.pendingEvents())
		}
		time.Sleep(100 * time.Millisecond)
	}
	atRestart := s.faulted.processed()
	pending := s.faulted.pendingEvents()
	if atRestart <= atStop {
		t.Errorf("the pump applied no mailbox row while the broker was down (%d processed at the stop, %d at the restart): Kafka is on its path", atStop, atRestart)
	}
	if pending == 0 {
		t.Fatalf("no event was pending when the broker came back: the outage proves nothing")
	}
	s.faulted.broker.start()

	p.finish()
	s.converge()
	t.Logf("broker down at %d of %d rows processed, back at %d with %d events pending", atStop, s.rows, atRestart, pending)
}
