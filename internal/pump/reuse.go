package pump

import (
	"errors"
	"fmt"
	"time"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// errMailboxIDsReused is logged when a mailbox row carries an id that was
// processed before as another message.
var errMailboxIDsReused = errors.New("the mailbox's ids were reused: a row with a processed id is another message")

// ReasonIDReused is the notice reason of a reused mailbox id.
const ReasonIDReused = "MAILBOX_ID_REUSED"

// reusedIDs finds the rows whose id proc_state knows as another message
// (other received time or payload), and forgets those states in states:
// such a row is a new message. Ids restart after a TRUNCATE, a restore, a
// reset AUTO_INCREMENT or a feed pointed at another mailbox; taking the
// new row for the old one would write the old result back and never
// apply it.
func (p *Pump) reusedIDs(items []item, states map[int64]pumpdata.ProcState) []pumpdata.ReusedID {
	var out []pumpdata.ReusedID
	for _, it := range items {
		prior, known := states[it.row.ID]
		if !known || prior.Same(it.row.Received, it.digest) {
			continue
		}
		delete(states, it.row.ID)
		out = append(out, pumpdata.ReusedID{MessageID: it.row.ID, Received: it.row.Received, Digest: it.digest})
		p.log.Error(errMailboxIDsReused, "mailbox row is a new message with a reused id; its predecessor's record moved to msg_id_reuse",
			"msg_id", it.row.ID, "received", it.row.Received.UTC().Format(time.RFC3339Nano),
			"predecessor_received", prior.ReceivedAt.UTC().Format(time.RFC3339Nano), "predecessor_status", prior.Status)
	}
	return out
}

// reportReused puts committed reuses into the status and the notices.
func (p *Pump) reportReused(reused []pumpdata.ReusedID) {
	if len(reused) == 0 {
		return
	}
	now := p.clock.Now()
	p.update(func(s *Status) {
		s.IDsReused += int64(len(reused))
		s.IDReusedLast, s.IDReusedAt = reused[len(reused)-1].MessageID, now
		for _, r := range reused {
			p.addNotice(Notice{Kind: NoticeIDReused, MessageID: r.MessageID, Reason: ReasonIDReused, Detail: fmt.Sprintf(
				"mailbox id %d was processed before as another message; the row received %s is processed as new (predecessor kept in msg_id_reuse)",
				r.MessageID, r.Received.UTC().Format(time.RFC3339Nano))})
		}
	})
}
