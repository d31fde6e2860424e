//go:build reliability

package faults_test

import (
	"fmt"
	"testing"
	"time"
)

// The faults an operator or a restart deals the pump from outside, with
// no proxy in the way (once internal/e2e/faults): the pump SIGKILLed, its
// PostgreSQL backends terminated, its MariaDB sessions killed, the broker
// process restarted. Each ends as every scenario does (scenario.end:
// check.Compare against the clean reference).

// brokerDown is how long the restarted broker stays down.
const brokerDown = 20 * time.Second

// TestPumpKilled: the pump is killed with SIGKILL in the middle of the
// drain, with no chance to clean up whatever it was doing (a transaction
// in flight, results not yet written back to the mailbox, events not yet
// delivered); a new `pump --drain` finishes the job.
func TestPumpKilled(t *testing.T) {
	s := newScenario(t, "pump/killed")
	at := s.w.waitProcessed(s.p, messages*40/100)
	s.p.Kill()
	s.faults++
	pending := s.w.PendingEvents()
	s.p = s.w.drain()
	s.runs++
	s.note("killed with %d of %d rows processed and %d events pending", at, messages, pending)
	s.end()
}

// cut is what one session fault ended.
type cut struct {
	atRow          int
	sessions, busy int
}

func (c cut) String() string {
	return fmt.Sprintf("%d sessions (%d busy) at %d rows", c.sessions, c.busy, c.atRow)
}

// strikeSessions runs fault at every strike point of the drain; at least
// one strike must have ended a session of the pump.
func (s *scenario) strikeSessions(what string, fault func() cut) {
	s.t.Helper()
	var cuts []cut
	total := 0
	s.strikeEach(func(at int) {
		c := fault()
		c.atRow = at
		cuts = append(cuts, c)
		total += c.sessions
		s.faults++
	})
	if total == 0 {
		s.t.Fatalf("%s: no %s of the pump was ended (%v): the scenario proves nothing", s.name, what, cuts)
	}
	s.note("%s ended: %v", what, cuts)
}

// TestPostgresSessionsTerminated: every PostgreSQL session of the pump is
// terminated (pg_terminate_backend), as an operator would, at each strike
// point of the drain.
func TestPostgresSessionsTerminated(t *testing.T) {
	s := newScenario(t, "postgres/sessions-terminated")
	s.strikeSessions("PostgreSQL session", s.w.terminatePostgres)
	s.end()
}

// TestMailboxSessionsKilled: every MariaDB session of the pump on the
// mailbox database is killed (KILL id) at each strike point of the drain.
func TestMailboxSessionsKilled(t *testing.T) {
	s := newScenario(t, "mariadb/sessions-killed")
	s.strikeSessions("mailbox session", s.w.killMailboxSessions)
	s.end()
}

// TestKafkaBrokerRestarted: the broker process goes down for twenty
// seconds during the drain and comes back on the same address with its
// topics and records. The pump keeps applying the mailbox meanwhile
// (Kafka is not on its path), the drain does not end while events are
// undelivered, and the dispatcher delivers everything once the broker is
// back.
func TestKafkaBrokerRestarted(t *testing.T) {
	s := newScenarioOpts(t, "kafka/broker-restarted", worldOptions{restartable: true})
	at := s.w.waitProcessed(s.p, messages*30/100)
	s.w.broker.stop()
	s.faults++
	downSince := time.Now()
	before := s.w.applied()
	// The outage: the drain must not end while the broker is away (the
	// rows processed from now on queue events no one can deliver).
	for time.Since(downSince) < brokerDown {
		if s.p.Exited() {
			t.Fatalf("%s: `pump --drain` ended (%v) while the broker was down, with %d events pending", s.name, s.p.Err(), s.w.PendingEvents())
		}
		time.Sleep(100 * time.Millisecond)
	}
	after, pending := s.w.applied(), s.w.PendingEvents()
	if after <= before {
		t.Errorf("%s: the pump applied no message while the broker was down (%d applied at the stop, %d at the restart): Kafka is on its path",
			s.name, before, after)
	}
	if pending == 0 {
		t.Fatalf("%s: no event was pending when the broker came back: the outage proves nothing", s.name)
	}
	s.w.broker.start()
	s.note("broker down at %d rows for %s; %d applied then, %d at the restart, %d events pending", at, brokerDown, before, after, pending)
	s.end()
}
