package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/store"
)

// leftover is what a drain stopped before its end left undone.
type leftover struct {
	// MailboxRows are VALID mailbox rows not yet processed.
	MailboxRows int64
	// Backfills are results committed but not yet written back to the
	// mailbox (the next start writes them).
	Backfills int64
	// OutboxEvents are outbox events not yet delivered to Kafka.
	OutboxEvents int64
}

func (l leftover) drained() bool { return l == leftover{} }

func (l leftover) String() string {
	return fmt.Sprintf("%d unprocessed mailbox rows, %d results not written back to the mailbox, %d undelivered outbox events",
		l.MailboxRows, l.Backfills, l.OutboxEvents)
}

// countTimeout bounds the count after a stop signal: the process is asked
// to go, so the answer must not wait on a database that hangs.
const countTimeout = 10 * time.Second

// interruptedDrain is the outcome of `pump --drain` when a signal stopped
// it: nil if the feed was drained all the same (the signal came as the
// last event was delivered), else an error saying what was left, so a
// script never takes an interrupted drain for a finished one.
func interruptedDrain(ctx context.Context, feed *config.Feed) error {
	// ctx is cancelled by the signal; the count needs its own deadline.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), countTimeout)
	defer cancel()
	left, err := countLeftover(cctx, feed)
	if err != nil {
		return fmt.Errorf("pump --drain stopped by a signal; what is left could not be counted: %w", err)
	}
	if left.drained() {
		return nil
	}
	return fmt.Errorf("pump --drain stopped by a signal before the feed was drained: %s", left)
}

// countLeftover counts with connections of its own: the runner's belong to
// a pump and dispatcher that have stopped.
func countLeftover(ctx context.Context, feed *config.Feed) (leftover, error) {
	var left leftover
	mb, err := mailbox.OpenFeed(ctx, feed)
	if err != nil {
		return left, err
	}
	defer func() { _ = mb.Close() }()
	if left.MailboxRows, _, err = mb.Depth(ctx); err != nil {
		return left, err
	}
	dbTLS, err := feed.DatabaseTLS()
	if err != nil {
		return left, err
	}
	st, err := store.Open(ctx, feed.Secrets.DatabaseDSN, store.Options{MaxConns: 2, Location: feed.Location, TLS: dbTLS,
		MaxMessageBytes: feed.Spec.Mailbox.MaxMessageBytes})
	if err != nil {
		return left, err
	}
	defer st.Close()
	if left.Backfills, err = st.CountBackfills(ctx); err != nil {
		return left, err
	}
	if left.OutboxEvents, _, err = st.OutboxStats(ctx); err != nil {
		return left, err
	}
	return left, nil
}

// parkedAfterDrain is the outcome of a drain that ended: nil when no
// outbox event is parked, else an error whose one line says how many, the
// oldest and what to do.
func parkedAfterDrain(ctx context.Context, r *feedrun.Runner) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), countTimeout)
	defer cancel()
	n, first, err := r.Parked(cctx)
	if err != nil {
		return fmt.Errorf("pump --drain: drained, but the parked outbox events could not be counted: %w", err)
	}
	if n == 0 {
		return nil
	}
	what := ""
	if first != nil {
		what = fmt.Sprintf(" (oldest: event %d, the %s of flight %s at version %d: %s)", first.ID, kindName(first.Kind),
			first.FLID, first.StateVersion, oneLine(first.LastError, 160))
	}
	return fmt.Errorf("pump --drain: drained, but %d outbox event(s) are PARKED: Kafka refused them for good%s; "+
		"list them with `flightfeed parked`, re-deliver with `flightfeed parked --redeliver ID|all` once the cause is fixed", n, what)
}

func kindName(kind string) string {
	if kind == store.KindNotice {
		return "notice"
	}
	return "state"
}
