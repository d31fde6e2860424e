package store

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// A snapshot's chunks go through two stages side by side. This goroutine
// holds the transaction's connection and runs every statement: a chunk's
// load, its versions, its writes. A worker goroutine does the work between
// them that needs no database: it reads a chunk's records (a deferred
// snapshot decodes them then), merges them with their stored states,
// stamps the writes and encodes their rows and events. A connection runs
// one statement at a time, so what overlaps is the pump's work with the
// server's: the server reads chunk k+1's stored states while the worker
// merges chunk k; it inserts chunk k's main rows while the worker encodes
// its child rows and renders its events, and inserts those while the
// worker merges chunk k+1. Only the flights the snapshot's facts found
// are loaded: a new day's chunks read nothing.
//
// The writes are those the chunks made one after the other before, in the
// same order (chunk k's versions are taken before chunk k+1's), so a
// snapshot writes the same rows with the same versions. The worker is at
// most one chunk ahead: a snapshot holds two chunks' records, states and
// rows at most, whatever its size.

// chunkOp is one write of a chunk, prepared by the worker and run on the
// connection.
type chunkOp func(ctx context.Context) error

// chunkStep is what the worker hands over, in order: for each chunk its
// merge (how many writes need versions), then its writes, then its end.
type chunkStep struct {
	merged    bool
	writes    int
	unchanged int
	op        chunkOp
	// end closes the chunk's steps: the versions its flights were written
	// at.
	end      bool
	assigned map[flight.FLID]int64
	err      error
	// panicked is a panic of the worker, raised again on the connection's
	// goroutine (a panic in the worker's own would end the process).
	panicked any
}

// chunkWorker is the worker's side of the pipeline.
type chunkWorker struct {
	t        *Tx
	meta     Meta
	src      RecordSource
	plan     engine.SnapshotPlan
	steps    chan<- chunkStep
	loaded   <-chan map[flight.FLID]flight.State
	versions <-chan []int64
}

// applySnapshotChunks merges and writes every record of src, a chunk of
// snapshotChunk records at a time, adding to out's counts and versions.
// stored are the flights the snapshot's facts found (those that exist);
// only they are loaded, with any flight an earlier chunk wrote.
func (t *Tx) applySnapshotChunks(ctx context.Context, meta Meta, src RecordSource, plan engine.SnapshotPlan,
	stored map[flight.FLID]string, out *SnapshotEffect) error {
	n := src.Len()
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	steps := make(chan chunkStep, 4)
	loaded := make(chan map[flight.FLID]flight.State, 1)
	versions := make(chan []int64, 1)
	w := &chunkWorker{t: t, meta: meta, src: src, plan: plan, steps: steps, loaded: loaded, versions: versions}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		w.run(ctx)
	}()
	// The worker is stopped and waited for whatever ends the chunks: it
	// reads the plan and the records.
	defer func() {
		cancel()
		<-finished
	}()

	load := toLoad(src, stored)
	cur, err := t.loadByFLID(ctx, load(0, min(snapshotChunk, n)))
	if err != nil {
		return err
	}
	loaded <- cur
	for lo := 0; lo < n; lo += snapshotChunk {
		hi := min(lo+snapshotChunk, n)
		// The next chunk's stored states are read while the worker
		// merges this one.
		var next map[flight.FLID]flight.State
		if hi < n {
			if next, err = t.loadByFLID(ctx, load(hi, min(hi+snapshotChunk, n))); err != nil {
				return err
			}
		}
		st, err := receive(ctx, steps)
		if err != nil {
			return err
		}
		if !st.merged {
			return fmt.Errorf("records %d–%d: the worker sent a write before the merge", lo+1, hi)
		}
		out.Unchanged += st.unchanged
		out.Upserted += st.writes
		v, err := t.nextVersions(ctx, st.writes)
		if err != nil {
			return err
		}
		versions <- v
		if hi < n {
			loaded <- next
		}
		for {
			st, err := receive(ctx, steps)
			if err != nil {
				return err
			}
			if st.end {
				maps.Copy(out.Versions, st.assigned)
				break
			}
			if err := st.op(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// receive is the worker's next step; a failure or a panic of the worker
// ends the chunks (a panic is raised again here).
func receive(ctx context.Context, steps <-chan chunkStep) (chunkStep, error) {
	select {
	case st := <-steps:
		if st.panicked != nil {
			panic(st.panicked)
		}
		return st, st.err
	case <-ctx.Done():
		return chunkStep{}, ctx.Err()
	}
}

// toLoad returns the FLIDs of records lo..hi that may have a stored state:
// those the facts found, and any that an earlier chunk held (the decoder
// refuses a snapshot that repeats a FLID; a RecordSource need not). A
// flight the facts did not find cannot appear meanwhile: the transaction
// holds the writer's lock.
func toLoad(src RecordSource, stored map[flight.FLID]string) func(lo, hi int) []flight.FLID {
	earlier := make(map[flight.FLID]struct{}, src.Len())
	return func(lo, hi int) []flight.FLID {
		var ids []flight.FLID
		for i := lo; i < hi; i++ {
			flid, _ := src.Key(i)
			_, exists := stored[flid]
			_, seen := earlier[flid]
			if exists || seen {
				ids = append(ids, flid)
			}
		}
		for i := lo; i < hi; i++ {
			flid, _ := src.Key(i)
			earlier[flid] = struct{}{}
		}
		return ids
	}
}

// run prepares every chunk in order; it returns when all are handed over,
// on the first error (handed over too) or when ctx ends.
func (w *chunkWorker) run(ctx context.Context) {
	defer func() {
		if v := recover(); v != nil {
			w.send(ctx, chunkStep{panicked: v})
		}
	}()
	n := w.src.Len()
	for lo := 0; lo < n; lo += snapshotChunk {
		hi := min(lo+snapshotChunk, n)
		if err := w.chunk(ctx, lo, hi); err != nil {
			w.send(ctx, chunkStep{err: err})
			return
		}
	}
}

// send hands st over; false when the connection's side stopped.
func (w *chunkWorker) send(ctx context.Context, st chunkStep) bool {
	select {
	case w.steps <- st:
		return true
	case <-ctx.Done():
		return false
	}
}

// errStopped ends the worker when the connection's side stopped first.
var errStopped = errors.New("snapshot chunks stopped")

func (w *chunkWorker) op(ctx context.Context, op chunkOp) error {
	if !w.send(ctx, chunkStep{op: op}) {
		return errStopped
	}
	return nil
}

// chunk prepares records lo..hi: reads and merges them, then, with their
// versions, hands over their writes as they are encoded: main rows and
// the small child tables first, then each large child table, then the
// events with their history rows.
func (w *chunkWorker) chunk(ctx context.Context, lo, hi int) error {
	recs, err := w.src.Chunk(lo, hi)
	if err != nil {
		return fmt.Errorf("records %d–%d: %w", lo+1, hi, err)
	}
	if len(recs) != hi-lo {
		return fmt.Errorf("records %d–%d: %d records read", lo+1, hi, len(recs))
	}
	cmds := make([]flight.Commands, len(recs))
	for i, r := range recs {
		cmds[i] = r.Cmds
	}
	var current map[flight.FLID]flight.State
	select {
	case current = <-w.loaded:
	case <-ctx.Done():
		return errStopped
	}
	writes, unchanged, err := w.plan.Merge(cmds, current)
	if err != nil {
		return err
	}
	if !w.send(ctx, chunkStep{merged: true, writes: len(writes), unchanged: unchanged}) {
		return errStopped
	}
	var versions []int64
	select {
	case versions = <-w.versions:
	case <-ctx.Done():
		return errStopped
	}
	if len(writes) == 0 {
		return w.end(ctx, nil)
	}
	t := w.t
	assigned := engine.Stamp(writes, versions, w.meta, t.now)
	sb := &pgx.Batch{}
	main, copies, err := queueStateWritesCopying(sb, writes, t.store.loc, snapshotCopyMin)
	if err != nil {
		return err
	}
	if main != nil {
		c, sql, err := main.copyRows()
		if err != nil {
			return err
		}
		if err := w.copy(ctx, c, sql, "flight_schd", len(main.flids)); err != nil {
			return err
		}
	}
	if err := w.op(ctx, func(ctx context.Context) error { return t.sendBatch(ctx, sb) }); err != nil {
		return err
	}
	for _, cc := range copies {
		c, sql := cc.copyRows()
		if err := w.copy(ctx, c, sql, cc.table.name, len(cc.flids)); err != nil {
			return err
		}
	}
	events, err := engine.Upserts(writes, w.meta)
	if err != nil {
		return err
	}
	if len(events) < snapshotCopyMin {
		b := &pgx.Batch{}
		queueEvents(b, events)
		queueChanges(b, events, t.now)
		if err := w.op(ctx, func(ctx context.Context) error { return t.sendBatch(ctx, b) }); err != nil {
			return err
		}
		return w.end(ctx, assigned)
	}
	ev, err := eventRows(events)
	if err != nil {
		return err
	}
	if err := w.copy(ctx, ev, copyEventsSQL, "msg_event", len(events)); err != nil {
		return err
	}
	ch, err := changeRows(events, t.now)
	if err != nil {
		return err
	}
	if err := w.copy(ctx, ch, copyChangesSQL, "flight_change", len(events)); err != nil {
		return err
	}
	return w.end(ctx, assigned)
}

// copy hands over the COPY of rows encoded in c.
func (w *chunkWorker) copy(ctx context.Context, c *copyRows, sql, table string, rows int) error {
	return w.op(ctx, func(ctx context.Context) error {
		if err := w.t.send(ctx, c, sql, rows); err != nil {
			return fmt.Errorf("copy %d rows of %s: %w", rows, table, err)
		}
		return nil
	})
}

// end closes a chunk's steps.
func (w *chunkWorker) end(ctx context.Context, assigned map[flight.FLID]int64) error {
	if !w.send(ctx, chunkStep{end: true, assigned: assigned}) {
		return errStopped
	}
	return nil
}
