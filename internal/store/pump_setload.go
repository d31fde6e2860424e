package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// LoadSet starts a new working set over flids with up to versions state
// versions (after a snapshot changed the database under the old one);
// flights in cache (may be nil) are checked by version instead of loaded.
func (t *Tx) LoadSet(ctx context.Context, flids []flight.FLID, versions int, cache *StateCache) (*engine.WorkingSet, error) {
	b := &pgx.Batch{}
	b.Queue(takeVersionsSQL, versions)
	load := newSetLoad(flids, cache)
	load.queue(b)
	br := t.tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	return t.readSetAndClose(ctx, br, load, "load flights")
}

// readSetAndClose reads a working set from what is left of br (versions,
// then the set load), closes br and reloads the cached flights whose
// version moved: the end of both LoadSet and Prefetch. what names the read
// in a close error.
func (t *Tx) readSetAndClose(ctx context.Context, br pgx.BatchResults, load *setLoad, what string) (*engine.WorkingSet, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("take state versions: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("take state versions: %w", err)
	}
	states, stale, err := load.read(br)
	if err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := t.reload(ctx, stale, states); err != nil {
		return nil, err
	}
	return engine.NewWorkingSet(load.flids, states, versions, t.now), nil
}

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
		if _, ok := cache.Lookup(f); ok {
			l.cached = append(l.cached, int64(f)) //nolint:gosec // at most 12 digits
		} else {
			l.loaded = append(l.loaded, int64(f)) //nolint:gosec // at most 12 digits
		}
	}
	return l
}

// cacheCheckSQL returns, for each FLID in $1, its current state_version,
// probing the primary key once per key; absent flights return no row.
const cacheCheckSQL = `SELECT k.flid, f.state_version FROM unnest($1::bigint[]) AS k(flid)
	CROSS JOIN LATERAL (SELECT state_version FROM flight_schd WHERE flid = k.flid) f`

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
		if s, _ := l.cache.Lookup(f); s.StateVersion == v {
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
