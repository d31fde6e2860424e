package snapshot

import "fmt"

// Flags a snapshot decision can raise (trace log and proc_state).
const (
	FlagUnsolicited = "UNSOLICITED"
	FlagEmpty       = "EMPTY"
)

// Inbound is what attribution needs of a decoded snapshot message.
type Inbound struct {
	// Styp is DNLD or RESP.
	Styp string
	// Sender is the message's META/SNDR.
	Sender string
	// Days are the records' operation days, in record order.
	Days []string
	// DNLDFullDay is the feed's mailbox.dnldFullDay setting.
	DNLDFullDay bool
}

// Requests is what attribution needs of the request ledger.
type Requests struct {
	// PendingDay is the day of the live full-day request ("" when none).
	PendingDay string
	// PendingSender is whom the live request asked (its receiver), the one
	// sender whose RESP answers it; "" matches any sender (a request
	// recorded before the receiver was kept).
	PendingSender string
	// RequestedBefore reports whether a full-day request for day was ever
	// sent to sender.
	RequestedBefore func(day, sender string) bool
}

// Coverage is the decision: how the snapshot is applied.
type Coverage struct {
	// FullDay: apply as the full-day snapshot of Day (generation, roster,
	// diff-delete). Otherwise window semantics (upserts only).
	FullDay bool
	Day     string
	// CompletesPending: the live request is answered by this message.
	CompletesPending bool
	Flags            []string
}

// Attribute decides the coverage of a snapshot (processing rules R10.5). A RESP whose
// records span several days is rejected; a RESP of one day D (or an empty
// RESP while a request is live, D = its day) is the full-day snapshot of D
// when a request for D to its sender is live or was sent before, and
// completes the live request only when that request is for D and asked
// this sender (processing rules R7.1: a RESP completes the newest PENDING request
// of its operation day, sender and request type); anything else — a RESP
// from another sender included — is a window, flagged UNSOLICITED. A DNLD
// is a window unless DNLDFullDay holds and all its records share one day;
// it completes only a live request for that day ("DNLD 仅在运营日匹配时完成
// 请求"), whoever sent it. A DNLD window is the AODB's scheduled push, the
// normal case: it raises no flag.
func Attribute(in Inbound, req Requests) (Coverage, error) {
	day, single := oneDay(in.Days)
	var c Coverage
	if len(in.Days) == 0 {
		c.Flags = append(c.Flags, FlagEmpty)
	}
	switch in.Styp {
	case "RESP":
		if !single {
			return Coverage{}, &Rejection{Reason: ReasonMixedDays,
				Detail: fmt.Sprintf("RESP records span several operation days (%s)", span(in.Days))}
		}
		asked := req.PendingDay != "" && (req.PendingSender == "" || req.PendingSender == in.Sender)
		if len(in.Days) == 0 && asked {
			day = req.PendingDay
		}
		answers := asked && req.PendingDay == day
		if day != "" && (answers || (req.RequestedBefore != nil && req.RequestedBefore(day, in.Sender))) {
			c.FullDay, c.Day = true, day
			c.CompletesPending = answers
			return c, nil
		}
		c.Flags = append(c.Flags, FlagUnsolicited)
		return c, nil
	case "DNLD":
		if in.DNLDFullDay && single && day != "" {
			c.FullDay, c.Day = true, day
			c.CompletesPending = req.PendingDay == day
		}
		return c, nil
	default:
		return Coverage{}, fmt.Errorf("attribute snapshot: subtype %q is not a snapshot", in.Styp)
	}
}

// oneDay returns the single day all days share; single is false when they
// differ. No days is single with day "".
func oneDay(days []string) (string, bool) {
	if len(days) == 0 {
		return "", true
	}
	for _, d := range days[1:] {
		if d != days[0] {
			return "", false
		}
	}
	return days[0], true
}

func span(days []string) string {
	seen := map[string]bool{}
	var out []string
	for _, d := range days {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	if len(out) > 5 {
		return fmt.Sprintf("%s … %d days", out[0], len(out))
	}
	return fmt.Sprint(out)
}
