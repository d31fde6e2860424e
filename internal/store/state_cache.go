package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// DefaultStateCacheFlights bounds a StateCache: about two busy days of a
// large airport, a few hundred MB at most.
const DefaultStateCacheFlights = 20000

// StateCache keeps the flight states a writer committed, so that the next
// batch over the same flights reads one version number per flight instead
// of ten tables. An entry is used only while the database holds the same
// state_version: the guard trigger makes a flight's version rise with every
// write of its row, and versions come from a sequence and are never reused,
// so a (FLID, version) pair names exactly one content. A stale or missing
// entry costs a reload, never a wrong state; nothing has to invalidate it.
//
// A StateCache belongs to one writer (one pump goroutine) and is not safe
// for concurrent use. Cached states are shared, never mutated: the merge
// engine works on clones.
type StateCache struct {
	states map[flight.FLID]flight.State
	limit  int
}

// NewStateCache holds up to limit flights (DefaultStateCacheFlights when
// limit ≤ 0).
func NewStateCache(limit int) *StateCache {
	if limit <= 0 {
		limit = DefaultStateCacheFlights
	}
	return &StateCache{states: map[flight.FLID]flight.State{}, limit: limit}
}

// Len is the number of cached flights.
func (c *StateCache) Len() int { return len(c.states) }

// Keep records what a working set left after its transaction committed:
// the flights it holds, and the absence of those it deleted. Call it only
// after the commit; a set whose transaction rolled back must not be kept.
func (c *StateCache) Keep(w *WorkingSet) {
	if c == nil || w == nil {
		return
	}
	for f := range w.loaded {
		if s, ok := w.base[f]; ok {
			c.states[f] = s
		} else {
			delete(c.states, f)
		}
	}
	if over := len(c.states) - c.limit; over > 0 {
		// Evict a quarter of the limit in map order (arbitrary), so a full
		// cache does not evict on every batch.
		drop := over + c.limit/4
		for f := range c.states {
			if drop == 0 {
				break
			}
			delete(c.states, f)
			drop--
		}
	}
}

// Forget empties the cache.
func (c *StateCache) Forget() {
	if c != nil {
		clear(c.states)
	}
}

// cacheCheckSQL returns, for each FLID in $1, its current state_version,
// probing the primary key once per key; absent flights return no row.
const cacheCheckSQL = `SELECT k.flid, f.state_version FROM unnest($1::bigint[]) AS k(flid)
	CROSS JOIN LATERAL (SELECT state_version FROM flight_schd WHERE flid = k.flid) f`

// setLoad is how a working set gets its flights: cached ones are checked
// by version, the others loaded whole, in the caller's batch.
type setLoad struct {
	flids  []flight.FLID
	cache  *StateCache
	cached []int64 // FLIDs with a cache entry: version check only
	loaded []int64 // FLIDs without one: full load
}

func newSetLoad(flids []flight.FLID, cache *StateCache) *setLoad {
	l := &setLoad{flids: flids, cache: cache}
	seen := make(map[flight.FLID]bool, len(flids))
	for _, f := range flids {
		if seen[f] {
			continue
		}
		seen[f] = true
		if _, ok := cache.lookup(f); ok {
			l.cached = append(l.cached, int64(f)) //nolint:gosec // at most 12 digits
		} else {
			l.loaded = append(l.loaded, int64(f)) //nolint:gosec // at most 12 digits
		}
	}
	return l
}

func (c *StateCache) lookup(f flight.FLID) (flight.State, bool) {
	if c == nil {
		return flight.State{}, false
	}
	s, ok := c.states[f]
	return s, ok
}

// queue adds the version check and the full load to b, each only when
// it has FLIDs to look at.
func (l *setLoad) queue(b *pgx.Batch) {
	if len(l.cached) > 0 {
		b.Queue(cacheCheckSQL, l.cached)
	}
	if len(l.loaded) > 0 {
		queueLoadFLIDs(b, l.loaded)
	}
}

// read reads what queue asked for: the flights that exist, and the cached
// ones whose version moved (stale), which the caller reloads once the
// batch is closed.
func (l *setLoad) read(br pgx.BatchResults) (states map[flight.FLID]flight.State, stale []int64, err error) {
	current := map[flight.FLID]int64{}
	if len(l.cached) > 0 {
		rows, err := br.Query()
		if err != nil {
			return nil, nil, fmt.Errorf("check cached flights: %w", err)
		}
		for rows.Next() {
			var f, v int64
			if err := rows.Scan(&f, &v); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("check cached flights: %w", err)
			}
			current[flight.FLID(f)] = v //nolint:gosec // checked column
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, fmt.Errorf("check cached flights: %w", err)
		}
	}
	var loaded []flight.State
	if len(l.loaded) > 0 {
		if loaded, err = readLoad(br); err != nil {
			return nil, nil, err
		}
	}
	states = make(map[flight.FLID]flight.State, len(l.cached)+len(loaded))
	for _, s := range loaded {
		states[s.FLID] = s
	}
	for _, id := range l.cached {
		f := flight.FLID(id) //nolint:gosec // at most 12 digits
		v, exists := current[f]
		if !exists {
			continue // deleted since: absent from the set, as in the database
		}
		if s, _ := l.cache.lookup(f); s.StateVersion == v {
			states[f] = s
			continue
		}
		stale = append(stale, id)
	}
	return states, stale, nil
}

// reload loads the stale flights into states (one more round trip).
func (t *Tx) reload(ctx context.Context, stale []int64, states map[flight.FLID]flight.State) error {
	if len(stale) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	queueLoadFLIDs(b, stale)
	br := t.tx.SendBatch(ctx, b)
	loaded, err := readLoad(br)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("reload changed flights: %w", cerr)
	}
	if err != nil {
		return err
	}
	for _, s := range loaded {
		states[s.FLID] = s
	}
	return nil
}
