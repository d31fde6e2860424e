package pumpdata

import (
	"fmt"
	"strings"
	"time"

	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// Replay policies (processing rules R10.8): as-new runs the archived raw text through
// today's rules as if it had just arrived; skip-conflicts applies a
// day-mismatch full-day snapshot without its conflicting FLIDs, and a
// snapshot without the records the decoder refuses.
const (
	ReplayAsNew         = "as-new"
	ReplaySkipConflicts = "skip-conflicts"
)

// Replay request states.
const (
	ReplayPending = "PENDING"
	ReplayDone    = "DONE"
	ReplayRefused = "REFUSED"
)

// ReplayRequest is one row of replay_request.
type ReplayRequest struct {
	ID          int64      `json:"id"`
	MessageID   int64      `json:"message_id"`
	Policy      string     `json:"policy"`
	RequestedAt time.Time  `json:"requested_at"`
	State       string     `json:"state"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	// Result, Reason and Note are the replay's own result; for REFUSED,
	// Note says why the pump refused it.
	Result string `json:"result,omitempty"`
	Reason string `json:"reason,omitempty"`
	Note   string `json:"note,omitempty"`
}

// ReplayFits says why policy cannot replay a message in status with
// reason ("" when it can): only DEAD messages are replayed, and
// skip-conflicts only a day-mismatch snapshot or one the decoder refused
// for a record's content (sis.SkippableReason: such records are left out,
// each named).
func ReplayFits(policy, status, reason string) string {
	dayMismatchReason := snapshot.ReasonDayMismatch
	switch {
	case status != StatusDead:
		return fmt.Sprintf("it is %s, not DEAD: only a DEAD message can be replayed", status)
	case policy == ReplaySkipConflicts && reason != dayMismatchReason && !sis.SkippableReason(sis.Reason(reason)):
		return fmt.Sprintf("skip-conflicts is only for a DEAD(PROTOCOL) %s snapshot or a snapshot refused for a record's content (%s), and this message is DEAD(%s); use --policy as-new",
			dayMismatchReason, skippableList(), reason)
	}
	return ""
}

func skippableList() string {
	var out []string
	for _, r := range sis.Reasons {
		if sis.SkippableReason(r) {
			out = append(out, string(r))
		}
	}
	return strings.Join(out, ", ")
}

// ReplaySource is what a replay needs of the original message: its
// archived raw text and its processing state.
type ReplaySource struct {
	ReceivedAt time.Time
	Body       []byte
	Truncated  bool
	// Archived is false when msg_archive holds no row for it.
	Archived bool
	State    ProcState
}
