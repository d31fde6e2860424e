package engine

import (
	"runtime"
	"sync"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Stamp gives each write its new state version (versions[i], ascending
// from the caller's pool), meta's message as its last and now (the
// transaction's time) as its update time, and returns the versions by
// FLID. A snapshot's chunk and a sweep are stamped so; a working set
// stamps its own.
func Stamp(writes []Write, versions []int64, meta Meta, now time.Time) map[flight.FLID]int64 {
	assigned := make(map[flight.FLID]int64, len(writes))
	for i := range writes {
		w := &writes[i]
		w.Next.StateVersion = versions[i]
		w.Next.LastMessageID = meta.MessageID
		w.Next.UpdatedAt = now
		assigned[w.Next.FLID] = versions[i]
	}
	return assigned
}

// Upserts renders the events of stamped writes, in their order: each
// one's notice and state, measured against meta's door. A large snapshot
// spreads the JSON work over the cores.
func Upserts(writes []Write, meta Meta) ([]Event, error) {
	events := make([]Event, len(writes))
	errs := make([]error, len(writes))
	inParallel(len(writes), func(i int) {
		events[i], errs[i] = upsertEvent(&writes[i].Next, writes[i].Changed, writes[i].Diff, meta)
	})
	for i := range writes {
		if errs[i] != nil {
			return nil, errs[i]
		}
	}
	newestStateOnly(events)
	return events, nil
}

// Tombstones renders the events of deleted flights (gone[i] deleted at
// versions[i]): each one's tombstone and notice. Each state's day is the
// day its tombstone is published under. The history records them as a
// lifecycle job's (ChangeHistory, meta.Type TypeJob) or else as a
// snapshot's diff-delete (ChangeVictim).
func Tombstones(gone []flight.State, versions []int64, meta Meta) ([]Event, map[flight.FLID]int64, error) {
	kind := ChangeVictim
	if meta.Type == TypeJob {
		kind = ChangeHistory
	}
	events := make([]Event, 0, len(gone))
	assigned := make(map[flight.FLID]int64, len(gone))
	for i, d := range gone {
		ev, err := deleteEvent(d.FLID, versions[i], d.OperationDay, meta, kind)
		if err != nil {
			return nil, nil, err
		}
		assigned[d.FLID] = versions[i]
		events = append(events, ev)
	}
	newestStateOnly(events)
	return events, assigned, nil
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
