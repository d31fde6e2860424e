package pump

import "github.com/flightfeed/flightfeed/internal/snapshot"

// maxNotices bounds the notices kept between two drains; older ones drop.
const maxNotices = 256

// Notice is one notable outcome, for the operator's Kubernetes Events:
// a message that became DEAD (DayMismatch when a snapshot was refused
// because a FLID belongs to another operation day).
type Notice struct {
	MessageID   int64
	Reason      string
	Detail      string
	DayMismatch bool
}

// DrainNotices returns the notices since the last call, oldest first.
func (p *Pump) DrainNotices() []Notice {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.notices
	p.notices = nil
	return out
}

// notice records a DEAD result (call with p.mu held).
func (p *Pump) notice(id int64, reason, detail string) {
	if len(p.notices) == maxNotices {
		p.notices = p.notices[1:]
	}
	p.notices = append(p.notices, Notice{MessageID: id, Reason: reason, Detail: detail,
		DayMismatch: reason == snapshot.ReasonDayMismatch})
}
