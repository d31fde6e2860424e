package pump

import "time"

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
