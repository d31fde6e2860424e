package dispatch

import (
	"context"

	"github.com/flightfeed/flightfeed/internal/store"
)

// SetBeforeProduce makes every pass of d call f after it read its events
// and before it produces them (a test freezes a leader there). Set it
// before the dispatcher runs.
func SetBeforeProduce(d *Dispatcher, f func(ctx context.Context, events []store.OutboxEvent)) {
	d.beforeProduce = f
}

// SetAfterCommit makes every pass of d call f after its Kafka transaction
// committed and before its events are marked delivered (a test crashes a
// leader there). Set it before the dispatcher runs.
func SetAfterCommit(d *Dispatcher, f func(ctx context.Context)) {
	d.afterCommit = f
}
