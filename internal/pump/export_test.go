package pump

import (
	"context"
	"time"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// BatchOutcome is processBatch's outcome, for the table tests of package
// pump_test.
type BatchOutcome struct {
	Blocked bool
	Wait    time.Duration
	Fatal   error
	Whole   bool
}

// ApplyBatch decodes rows and applies them as one batch, as the loop does
// with a head it read.
func (p *Pump) ApplyBatch(ctx context.Context, rows []pumpdata.Row) BatchOutcome {
	o := p.processBatch(ctx, rows, p.decodeBatch(rows))
	return BatchOutcome{Blocked: o.blocked, Wait: o.wait, Fatal: o.err, Whole: o.whole}
}

// Step runs one turn of the loop: a batch from the head, or the chores of
// an empty head; worked says to go again at once, otherwise wait is how
// long the loop waits before the next turn.
func (p *Pump) Step(ctx context.Context) (worked bool, wait time.Duration, err error) {
	return p.step(ctx)
}

// BatchSize is the size of the next batch the loop reads.
func (p *Pump) BatchSize() int { return p.batchSize }

// Pending are the committed results waiting for the next write-back.
func (p *Pump) Pending() []pumpdata.Backfill { return p.pending }

// InjectPanics makes the pump call decode before it decodes a row and
// applied after a message's effects are in its batch, each with the row's
// id: a test panics there to stand for a bug of the decoder or of a write
// path.
func (p *Pump) InjectPanics(decode, applied func(id int64)) {
	p.hooks = hooks{decode: decode, applied: applied}
}

// SetBatchSize sets the size of the next batch the loop reads.
func (p *Pump) SetBatchSize(n int) { p.batchSize = n }

// DeferRecordsFrom is the body size from which a snapshot's records are
// decoded again as the store applies them.
const DeferRecordsFrom = deferRecordsFrom
