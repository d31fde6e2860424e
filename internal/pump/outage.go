package pump

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightfeed/flightfeed/internal/failpoint"
)

// outageLogEvery bounds how often a lasting mailbox outage is logged
// again: the first failure is logged at once, then one line per interval
// with how long it has lasted and how many attempts failed.
const outageLogEvery = 30 * time.Second

// outage tracks a failing mailbox. Only the loop goroutine touches it.
type outage struct {
	since, logged time.Time
	failures      int64
	// writeBack: the write-back failed; a successful head read alone does
	// not end such an outage (the mailbox may answer reads but refuse
	// updates), a successful write-back does.
	writeBack bool
}

// mailboxFailed records a failed mailbox read or write-back: status,
// metric, and a log line that does not repeat more than once per
// outageLogEvery however fast the attempts come.
func (p *Pump) mailboxFailed(err error, writeBack bool) {
	now := p.clock.Now()
	o := &p.mboxOutage
	o.failures++
	o.writeBack = o.writeBack || writeBack
	p.obs.ServiceError(ServiceMailbox)
	p.update(func(s *Status) { s.MailboxReachable, s.MailboxError = false, err.Error() })
	switch {
	case o.since.IsZero():
		o.since, o.logged = now, now
		p.log.Error(err, "mailbox unreachable; the head waits with backoff")
	case now.Sub(o.logged) >= outageLogEvery:
		o.logged = now
		p.log.Error(err, "mailbox still unreachable", "for", now.Sub(o.since).Round(time.Second).String(), "failures", o.failures)
	}
}

// mailboxAnswered records a successful read (wroteBack false) or
// write-back (true): it ends an outage that such a success ends, logged
// once, and marks the mailbox reachable.
func (p *Pump) mailboxAnswered(wroteBack bool) {
	o := &p.mboxOutage
	if o.writeBack && !wroteBack {
		return
	}
	if !o.since.IsZero() {
		p.log.Info("mailbox reachable again", "after", p.clock.Since(o.since).Round(time.Millisecond).String(), "failures", o.failures)
		*o = outage{}
	}
	p.update(func(s *Status) { s.MailboxReachable, s.MailboxError = true, "" })
}

// DatabaseStallAfter is how long a database call may stay unanswered
// before the pump reports the database as not answering: far longer than
// any statement of a batch takes (a 9,999-flight snapshot's COPY takes
// well under a second), far shorter than an operator waits before looking.
// A stalled server or a network path that holds the connection open and
// carries nothing fails no call and closes nothing, and the server's
// statement_timeout cannot fire through it: without this the head would
// wait in silence.
const DatabaseStallAfter = 15 * time.Second

// watchDatabase reports, while ctx lasts, a database call left unanswered
// for DatabaseStallAfter: DatabaseReachable false with the call and since
// when it waits, the head blocked since the call began, and a log line
// (repeated at most once per outageLogEvery); and the database answering
// again once no call waits that long. It only reads the store's tracker
// and never waits on the database itself, so it reports what a stuck
// batch cannot.
func (p *Pump) watchDatabase(ctx context.Context) {
	t := p.clock.NewTicker(time.Second)
	defer t.Stop()
	var stalled, logged time.Time
	var reported string // the DatabaseError this watch set last
	for {
		stopping := false
		select {
		case <-ctx.Done():
			stopping = true
		case <-t.C():
		}
		failpoint.Panic(failpoint.DatabaseWatch)
		since, what := p.store.Unanswered()
		now := p.clock.Now()
		if stopping && (stalled.IsZero() || (!since.IsZero() && now.Sub(since) >= DatabaseStallAfter)) {
			return
		}
		if since.IsZero() || now.Sub(since) < DatabaseStallAfter {
			if !stalled.IsZero() {
				p.log.Info("database answering again", "after", now.Sub(stalled).Round(time.Second).String())
				p.update(func(s *Status) {
					if s.DatabaseError == reported {
						s.DatabaseReachable, s.DatabaseError = true, ""
					}
				})
				stalled, reported = time.Time{}, ""
			}
			if stopping {
				return
			}
			continue
		}
		waited := now.Sub(since).Round(time.Second)
		// The reason stays the same for the whole stall (no status churn).
		msg := fmt.Sprintf("the database has not answered since %s (%s in progress)", since.UTC().Format(time.RFC3339), what)
		reported = msg
		p.update(func(s *Status) {
			s.DatabaseReachable, s.DatabaseError = false, msg
			if s.HeadBlockedSince.IsZero() {
				s.HeadBlockedSince, s.HeadLastError = since, msg
			}
		})
		switch {
		case stalled.IsZero():
			stalled, logged = since, now
			p.obs.ServiceError(ServiceDatabase)
			p.log.Error(errors.New(msg), "database not answering; the head waits", "for", waited.String(), "call", what)
		case now.Sub(logged) >= outageLogEvery:
			logged = now
			p.log.Error(errors.New(msg), "database still not answering", "for", waited.String(), "call", what)
		}
	}
}
