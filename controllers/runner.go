package controllers

import (
	"context"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/pump"
)

// FeedRunner is one feed's pump + dispatcher, started when this replica
// leads the feed.
type FeedRunner interface {
	// Run blocks until ctx is cancelled or the pump fails; the epoch was
	// taken by the caller. It returns nil after cancellation and an error
	// (store.ErrFenced when another pump took a newer epoch) otherwise.
	Run(ctx context.Context) error
	// Status is a point-in-time report; it must be cheap and safe to call
	// from another goroutine while Run runs.
	Status() pump.Status
}

// A FeedRunner may also implement Close() (feedrun.Runner does): the
// supervisor calls it once, after Run has returned, to release the runner's
// connections.

// RunnerFactory builds a runner for a resolved feed; identity is the pod
// identity, epoch the fencing epoch taken on becoming leader. ctx is the
// leadership context: it carries the runner's logger (logf.FromContext) and
// metrics observer (ObserverFromContext) and is cancelled when leadership
// ends. The factory must not start work that outlives Run.
type RunnerFactory func(ctx context.Context, feed *config.Feed, identity string, epoch int64) (FeedRunner, error)

// NoticeKind classifies a notable outcome the operator reports as a
// Kubernetes Event on the FlightFeed.
type NoticeKind string

// Notice kinds.
const (
	// NoticeDead: a message became DEAD.
	NoticeDead NoticeKind = "DeadMessage"
	// NoticeDayMismatch: a snapshot was rejected because a FLID belongs to
	// another operation day (alert SAME_FLID_ACROSS_OPERATION_DAYS).
	NoticeDayMismatch NoticeKind = "DayMismatch"
	// NoticeIDReused: a mailbox row reused the id of another, already
	// processed message; it was processed as new.
	NoticeIDReused NoticeKind = "MailboxIDReused"
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

// NoticeSource is implemented by a FeedRunner that reports individual
// notable messages. Without it the status reporter still emits one Event
// per report that saw the DEAD count rise, without message ids.
type NoticeSource interface {
	// DrainNotices returns the notices since the last call, oldest first.
	// The runner keeps a bounded buffer; it may drop the oldest.
	DrainNotices() []Notice
}

type observerKey struct{}

// ObserverFromContext returns the metrics observer of the feed the runner is
// built for (pass it as pump.Options.Observer). It never returns nil: a
// context without one yields an observer that records nothing.
func ObserverFromContext(ctx context.Context) *FeedObserver {
	if o, ok := ctx.Value(observerKey{}).(*FeedObserver); ok {
		return o
	}
	return &FeedObserver{}
}

func withObserver(ctx context.Context, o *FeedObserver) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}
