package snapshot

import "time"

// Alert flags of a committed full-day snapshot (processing rules R5.6): the
// snapshot is applied all the same, the flag only alerts.
const (
	// FlagRecsDrop: the day's roster shrank by more than the configured
	// share of the previous one (mailbox.recsDropPercent).
	FlagRecsDrop = "RECS_DROP"
	// FlagOutOfOrder: the snapshot's META send time is older than that of
	// the day's last committed snapshot. Messages still apply in mailbox
	// order (the seed enables no staleness check).
	FlagOutOfOrder = "OUT_OF_ORDER"
)

// RecsDropped reports whether a roster of before flights shrank to after
// by more than percent of before. An empty previous roster cannot drop.
func RecsDropped(before, after, percent int) bool {
	if before <= 0 || percent <= 0 || after >= before {
		return false
	}
	return (before-after)*100 > percent*before
}

// OutOfOrder reports whether a snapshot sent at sent is older than the
// day's previous committed snapshot, sent at prev; false when either is
// unknown (zero).
func OutOfOrder(prev, sent time.Time) bool {
	return !prev.IsZero() && !sent.IsZero() && sent.Before(prev)
}
