package store

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// loadByFLID reads the current states of flids (one round trip).
func (t *Tx) loadByFLID(ctx context.Context, flids []flight.FLID) (map[flight.FLID]flight.State, error) {
	out := make(map[flight.FLID]flight.State, len(flids))
	if len(flids) == 0 {
		return out, nil
	}
	ids := make([]int64, len(flids))
	for i, f := range flids {
		ids[i] = int64(f) //nolint:gosec // at most 12 digits
	}
	states, err := loadStates(ctx, t.tx, "flid = ANY($1)", ids)
	if err != nil {
		return nil, err
	}
	for _, s := range states {
		out[s.FLID] = s
	}
	return out, nil
}

// finish assigns versions and bookkeeping to the changed flights, and
// queues their writes and events.
func (t *Tx) finish(ctx context.Context, b *pgx.Batch, meta Meta, writes []stateWrite, deletes []flight.State) (map[flight.FLID]int64, error) {
	versions, err := t.nextVersions(ctx, len(writes)+len(deletes))
	if err != nil {
		return nil, err
	}
	assigned := make(map[flight.FLID]int64, len(versions))
	for i := range writes {
		w := &writes[i]
		w.next.StateVersion = versions[i]
		w.next.LastMessageID = meta.MessageID
		w.next.UpdatedAt = t.now
		assigned[w.next.FLID] = versions[i]
	}
	// The state rows go out first; the server writes them while the
	// events are rendered here (one more round trip, not one per flight).
	if len(writes) > 0 {
		sb := &pgx.Batch{}
		copies, err := queueStateWritesCopying(sb, writes, t.store.loc, copyChildMin)
		if err != nil {
			return nil, err
		}
		sent := t.tx.SendBatch(ctx, sb)
		events, evErr := eventsFor(writes, meta)
		if err := readBatch(sent, sb.Len()); err != nil {
			return nil, fmt.Errorf("write flights: %w", err)
		}
		if evErr != nil {
			return nil, evErr
		}
		if err := t.copyChildren(ctx, copies); err != nil {
			return nil, fmt.Errorf("write flights: %w", err)
		}
		if len(events) >= copyEventsMin {
			if err := t.copyEvents(ctx, events); err != nil {
				return nil, err
			}
		} else {
			queueEvents(b, events)
		}
	}
	var events []outboxEvent
	ids := make([]int64, len(deletes))
	for i, d := range deletes {
		v := versions[len(writes)+i]
		assigned[d.FLID] = v
		ids[i] = int64(d.FLID) //nolint:gosec // at most 12 digits
		ev, err := deleteEvents(d.FLID, v, d.OperationDay, meta)
		if err != nil {
			return nil, err
		}
		events = append(events, ev...)
	}
	queueDeletes(b, ids)
	if len(ids) > 0 {
		b.Queue(`DELETE FROM schd_gen_flid WHERE flid = ANY($1)`, ids)
	}
	queueEvents(b, events)
	return assigned, nil
}

// eventsFor renders the events of many changed flights; a large snapshot
// spreads the JSON work over the cores (order is kept).
func eventsFor(writes []stateWrite, meta Meta) ([]outboxEvent, error) {
	out := make([][]outboxEvent, len(writes))
	errs := make([]error, len(writes))
	inParallel(len(writes), func(i int) {
		out[i], errs[i] = upsertEvents(&writes[i].next, writes[i].changed, meta)
	})
	events := make([]outboxEvent, 0, 2*len(writes))
	for i := range writes {
		if errs[i] != nil {
			return nil, errs[i]
		}
		events = append(events, out[i]...)
	}
	return events, nil
}

// inParallel calls fn(0..n-1), spread over the cores when n is large
// enough to pay for it. fn must only touch its own index.
func inParallel(n int, fn func(i int)) {
	workers := 1
	if n >= 256 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	if workers == 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// mergeOne applies cmds to the flight's current state (or a new one) and
// returns the write, or false when nothing changed on an existing flight.
func mergeOne(cur flight.State, exists bool, cmds flight.Commands) (stateWrite, bool, error) {
	if !exists {
		cur = flight.NewState(cmds.FLID)
	}
	next, changed, err := flight.Apply(cur, cmds)
	if err != nil {
		return stateWrite{}, false, fmt.Errorf("merge flight %s: %w", cmds.FLID, err)
	}
	if exists && len(changed) == 0 {
		return stateWrite{}, false, nil
	}
	if !exists {
		changed = presentTags(next)
	}
	return stateWrite{next: next, changed: changed, isNew: !exists}, true, nil
}

// presentTags lists the fields a state holds, in canonical order.
func presentTags(s flight.State) []string {
	return flight.ChangedKeys(flight.NewState(s.FLID), s)
}

// IncrementOutcome reports what a FLOP or ADFT did.
type IncrementOutcome struct {
	// Versions maps each written flight to its new state_version.
	Versions map[flight.FLID]int64
	Created  []flight.FLID
	// Unchanged counts records that changed nothing (no version, no event).
	Unchanged int
	// States are the written flights' new states (working set only).
	States map[flight.FLID]*flight.State
}

// ApplyIncrement merges increment records (FLOP, ADFT) into current state
// (seed 000 §6.1): absent fields are kept, the operation day is kept (NULL
// for a flight it creates), each changed record gets a new state_version
// and its KAFKA_SCHD and KAFKA_MSG events. Records for one FLID apply in
// order. It is a working set of one message, written at once.
func (t *Tx) ApplyIncrement(ctx context.Context, meta Meta, records []flight.Commands) (IncrementOutcome, error) {
	flids := make([]flight.FLID, len(records))
	for i, r := range records {
		flids[i] = r.FLID
	}
	set, err := t.LoadSet(ctx, flids, len(records), nil)
	if err != nil {
		return IncrementOutcome{}, fmt.Errorf("message %d: %w", meta.MessageID, err)
	}
	out, err := set.Increment(meta, records)
	if err != nil {
		return IncrementOutcome{}, err
	}
	if err := set.Flush(ctx); err != nil {
		return IncrementOutcome{}, fmt.Errorf("message %d: %w", meta.MessageID, err)
	}
	return out, nil
}

// DeleteOutcome reports what an FDEL did.
type DeleteOutcome struct {
	// Versions maps each deleted flight to its tombstone's state_version.
	Versions map[flight.FLID]int64
	// Missing lists FLIDs that did not exist (idempotent success).
	Missing []flight.FLID
}

// DeleteFlights ends flight instances (FDEL, seed 000 §6.2): main row and all
// child rows go, the FLID leaves its day's roster, a tombstone with a fresh
// state_version is queued. A missing FLID is an idempotent success. The
// day's generation and version are untouched.
func (t *Tx) DeleteFlights(ctx context.Context, meta Meta, flids []flight.FLID) (DeleteOutcome, error) {
	set, err := t.LoadSet(ctx, flids, len(flids), nil)
	if err != nil {
		return DeleteOutcome{}, fmt.Errorf("message %d: %w", meta.MessageID, err)
	}
	out, err := set.Delete(meta, flids)
	if err != nil {
		return DeleteOutcome{}, err
	}
	if err := set.Flush(ctx); err != nil {
		return DeleteOutcome{}, fmt.Errorf("message %d: delete: %w", meta.MessageID, err)
	}
	return out, nil
}
