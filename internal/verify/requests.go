package verify

import (
	"time"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// LoggedRequest is one row of the live request log (req_track) as it
// stands now.
type LoggedRequest struct {
	pumpdata.Request
	// UpdatedAt is when the row last changed: for a request that ended
	// without an answer (EXPIRED, TIMED_OUT, FAILED), when it ended.
	UpdatedAt time.Time
	// CompletedBy is the message that answered a COMPLETED request.
	CompletedBy int64
}

// RequestLog answers the questions the pump asks of its requests while it
// applies a message, as the live request log answered them when the live
// pump applied that message.
type RequestLog struct {
	reqs []LoggedRequest
	// pos is each message's place in the mailbox order.
	pos map[int64]int
}

// NewRequestLog keeps the live log reqs; order is the replayed messages
// in mailbox order.
func NewRequestLog(reqs []LoggedRequest, order []Archived) RequestLog {
	pos := make(map[int64]int, len(order))
	for i, a := range order {
		pos[a.ID] = i
	}
	return RequestLog{reqs: reqs, pos: pos}
}

// Pending is the request of kind that was live when the live pump applied
// message msg at at (nil when none): opened at or before at, and then
// still live — completed by msg or a later message, ended without an
// answer at or after at, or live still.
func (l RequestLog) Pending(kind string, msg int64, at time.Time) *pumpdata.Request {
	var best *LoggedRequest
	for i := range l.reqs {
		r := &l.reqs[i]
		if r.Kind != kind || r.RequestedAt.After(at) || !l.liveAt(r, msg, at) {
			continue
		}
		if best == nil || r.RequestedAt.After(best.RequestedAt) || (r.RequestedAt.Equal(best.RequestedAt) && r.ID > best.ID) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	req := best.Request
	req.Status = pumpdata.RequestPending
	return &req
}

func (l RequestLog) liveAt(r *LoggedRequest, msg int64, at time.Time) bool {
	switch r.Status {
	case pumpdata.RequestPending:
		return true
	case pumpdata.RequestCompleted:
		by, okBy := l.pos[r.CompletedBy]
		me, okMe := l.pos[msg]
		if okBy && okMe {
			return me <= by
		}
		return r.CompletedBy == msg || !r.UpdatedAt.Before(at)
	default:
		return !r.UpdatedAt.Before(at)
	}
}

// RequestedBefore reports whether a request of kind for day had been sent
// to receiver (or recorded without a receiver) by at.
func (l RequestLog) RequestedBefore(kind, day, receiver string, at time.Time) bool {
	for _, r := range l.reqs {
		if r.Kind == kind && r.Day == day && !r.SentAt.IsZero() && !r.SentAt.After(at) &&
			(r.Receiver == "" || r.Receiver == receiver) {
			return true
		}
	}
	return false
}
