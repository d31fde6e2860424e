package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/engine"
)

// WriteSet writes a working set's effect to the transaction in one round
// trip and empties the set.
func (t *Tx) WriteSet(ctx context.Context, w *engine.WorkingSet) error {
	b := &pgx.Batch{}
	if err := queueSet(b, w, t.store.loc, t.now); err != nil {
		return err
	}
	if err := t.sendBatch(ctx, b); err != nil {
		return fmt.Errorf("write working set: %w", err)
	}
	w.Written()
	return nil
}

// queueSet adds to b what the set holds to write: flights deleted in the
// set go first (children, main row, roster), then every surviving changed
// flight is written whole against its database state, then the events
// and their history rows (stamped now, the transaction's time).
func queueSet(b *pgx.Batch, w *engine.WorkingSet, loc *time.Location, now time.Time) error {
	_, err := queueSetCopying(b, w, loc, now, 0)
	return err
}

// queueSetCopying is queueSet that leaves the events out of b when there
// are copyMin of them or more (copyMin > 0) and returns them: the caller
// writes them and their history rows with copyBatchEvents after b.
func queueSetCopying(b *pgx.Batch, w *engine.WorkingSet, loc *time.Location, now time.Time, copyMin int) ([]engine.Event, error) {
	p := w.Pending()
	gone := make([]int64, len(p.Gone))
	for i, f := range p.Gone {
		gone[i] = int64(f) //nolint:gosec // 12 digits
	}
	queueDeletes(b, gone)
	if err := queueStateWrites(b, p.Writes, loc); err != nil {
		return nil, err
	}
	if copyMin > 0 && len(p.Events) >= copyMin {
		return p.Events, nil
	}
	queueEvents(b, p.Events)
	queueChanges(b, p.Events, now)
	return nil, nil
}
