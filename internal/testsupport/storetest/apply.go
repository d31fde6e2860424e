package storetest

import (
	"context"
	"fmt"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// ApplyIncrement merges one message's increment records (FLOP, ADFT) in tx
// as a working set of its own, written at once (see store.WorkingSet.Increment):
// the pump's path for a batch of one increment, without the pump.
func ApplyIncrement(ctx context.Context, tx *store.Tx, meta store.Meta, records []flight.Commands) (store.IncrementEffect, error) {
	flids := make([]flight.FLID, len(records))
	for i, r := range records {
		flids[i] = r.FLID
	}
	set, err := tx.LoadSet(ctx, flids, len(records), nil)
	if err != nil {
		return store.IncrementEffect{}, fmt.Errorf("message %d: %w", meta.MessageID, err)
	}
	out, err := set.Increment(meta, records)
	if err != nil {
		return store.IncrementEffect{}, err
	}
	if err := tx.WriteSet(ctx, set); err != nil {
		return store.IncrementEffect{}, fmt.Errorf("message %d: %w", meta.MessageID, err)
	}
	return out, nil
}

// DeleteFlights ends flight instances (FDEL) in tx as a working set of its
// own, written at once (see store.WorkingSet.Delete).
func DeleteFlights(ctx context.Context, tx *store.Tx, meta store.Meta, flids []flight.FLID) (store.DeleteEffect, error) {
	set, err := tx.LoadSet(ctx, flids, len(flids), nil)
	if err != nil {
		return store.DeleteEffect{}, fmt.Errorf("message %d: %w", meta.MessageID, err)
	}
	out, err := set.Delete(meta, flids)
	if err != nil {
		return store.DeleteEffect{}, err
	}
	if err := tx.WriteSet(ctx, set); err != nil {
		return store.DeleteEffect{}, fmt.Errorf("message %d: delete: %w", meta.MessageID, err)
	}
	return out, nil
}
