package pump

import "github.com/flightfeed/flightfeed/internal/snapshot"

// maxNotices bounds the notices kept between two drains; older ones drop.
const maxNotices = 256

// NoticeKind classifies a notable outcome; the operator records each as a
// Kubernetes Event whose reason is the kind.
type NoticeKind string

// Notice kinds.
const (
	// NoticeDead: a message became DEAD.
	NoticeDead NoticeKind = "DeadMessage"
	// NoticeDayMismatch: a snapshot was refused because a FLID belongs to
	// another operation day (alert SAME_FLID_ACROSS_OPERATION_DAYS).
	NoticeDayMismatch NoticeKind = "DayMismatch"
	// NoticeIDReused: a mailbox row reused the id of another, already
	// processed message; it was processed as new.
	NoticeIDReused NoticeKind = "MailboxIDReused"
	// NoticeSnapshotFlag: a snapshot's trace row carries a flag (processing rules
	// R5.6: EMPTY, RECS_DROP, OUT_OF_ORDER, SEQN_REGRESSION, DAY_MISMATCH,
	// UNSOLICITED, or a refused snapshot's reason); one notice per flag.
	NoticeSnapshotFlag NoticeKind = "SnapshotFlag"
	// NoticePanic: decoding or applying a message panicked; it became
	// DEAD (INTERNAL) and the pump went on (the stack is in the log).
	NoticePanic NoticeKind = "MessagePanicked"
	// NoticeSeqnRegression: an increment or a deletion (FLOP, ADFT, FDEL)
	// came with a SEQN lower than its sender's previous one in this
	// session (processing rules R9: flagged and alerted, not blocked). A
	// snapshot's regression is a NoticeSnapshotFlag of its trace row.
	NoticeSeqnRegression NoticeKind = "SeqnRegression"
	// NoticeRequestFailed: the answers to a day's full-day request were
	// refused the same way twice in a row; the request FAILED and the day
	// is not asked for again until an operator re-requests it.
	NoticeRequestFailed NoticeKind = "RequestFailed"
)

// Notice is one notable outcome of the pump.
type Notice struct {
	Kind NoticeKind
	// MessageID is the mailbox row id.
	MessageID int64
	// Reason is the reason code (e.g. PROTOCOL, OVERSIZE); Detail a short
	// human message.
	Reason, Detail string
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
	kind := NoticeDead
	switch reason {
	case snapshot.ReasonDayMismatch:
		kind = NoticeDayMismatch
	case ReasonInternal:
		kind = NoticePanic
	}
	p.addNotice(Notice{Kind: kind, MessageID: id, Reason: reason, Detail: detail})
}

// addNotice keeps n, dropping the oldest beyond maxNotices (call with p.mu
// held).
func (p *Pump) addNotice(n Notice) {
	if len(p.notices) == maxNotices {
		p.notices = p.notices[1:]
	}
	p.notices = append(p.notices, n)
}
