package store_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// sqlLog records the text of every statement sent.
type sqlLog struct {
	mu   sync.Mutex
	sqls []string
}

func (l *sqlLog) add(sql string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sqls = append(l.sqls, sql)
}

// since counts the statements after mark that contain fragment.
func (l *sqlLog) since(mark int, fragment string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.sqls[mark:] {
		if strings.Contains(s, fragment) {
			n++
		}
	}
	return n
}

func (l *sqlLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sqls)
}

func (l *sqlLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.add(d.SQL)
	return ctx
}
func (l *sqlLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *sqlLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (l *sqlLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.add(d.SQL)
}
func (l *sqlLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// A cached flight is used only while the database holds its version: a
// hit loads nothing, a flight another writer changed is reloaded, and a
// flight deleted since is new again — the cache never yields a stale state.
func TestStateCacheTrustsOnlyTheStoredVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &sqlLog{}
	db := storetest.New(t, store.Options{Tracer: log})
	s, epoch := db.Store, db.Epoch
	cache := store.NewStateCache(0)
	msg := int64(0)
	set := func(tag, value string) flight.Command {
		return flight.Command{Tag: tag, Op: flight.OpSet, Value: value}
	}
	// batch applies one increment per FLID through a cached working set,
	// commits, and keeps the set; it returns the flights it created.
	batch := func(cmds map[flight.FLID][]flight.Command) []flight.FLID {
		t.Helper()
		tx, err := s.Begin(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		var flids []flight.FLID
		for f := range cmds {
			flids = append(flids, f)
		}
		slices.Sort(flids)
		pre, err := tx.Prefetch(ctx, store.PrefetchRequest{FLIDs: flids, Versions: len(flids), Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		var created []flight.FLID
		for _, f := range flids {
			msg++
			out, err := pre.Set.Increment(store.Meta{MessageID: msg, Type: "FLOP", Styp: "TEST"},
				[]flight.Commands{{FLID: f, Cmds: cmds[f]}})
			if err != nil {
				t.Fatal(err)
			}
			created = append(created, out.Created...)
		}
		if err := tx.FinishBatch(ctx, nil, pre.Set, nil); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		cache.Keep(pre.Set)
		return created
	}
	// elsewhere writes through the store's own paths, as another writer
	// (a snapshot, a lifecycle job, another pump) would.
	elsewhere := func(fn func(tx *store.Tx) error) {
		t.Helper()
		tx, err := s.Begin(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	read := func(f flight.FLID) (flight.State, bool) {
		t.Helper()
		states, err := s.ReadFlights(ctx, store.Filter{FLID: &f})
		if err != nil {
			t.Fatal(err)
		}
		if len(states) == 0 {
			return flight.State{}, false
		}
		return states[0], true
	}
	gates := flight.Command{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"GTNO": "1", "GATE": "A1"}}}

	if created := batch(map[flight.FLID][]flight.Command{1: {set("FLNO", "CA1"), gates}, 2: {set("FLNO", "CA2"), gates}}); len(created) != 2 {
		t.Fatalf("created %v, want flights 1 and 2", created)
	}
	if cache.Len() != 2 {
		t.Fatalf("cache holds %d flights, want 2", cache.Len())
	}

	// A hit: the flight's version is checked, its tables are not read.
	mark := log.mark()
	batch(map[flight.FLID][]flight.Command{1: {set("ESTT", "09SEP260900")}})
	if n := log.since(mark, "FROM flight_gate"); n != 0 {
		t.Errorf("a cached flight was loaded (%d reads of flight_gate)", n)
	}
	if got, _ := read(1); got.Scalars["ESTT"] != "09SEP260900" || got.Scalars["FLNO"] != "CA1" || len(got.Lists["GTDT"]) != 1 {
		t.Errorf("flight 1 after a cached increment: %+v", got)
	}

	// Another writer moves flight 2: the cached copy is stale and reloaded.
	elsewhere(func(tx *store.Tx) error {
		msg++
		_, err := storetest.ApplyIncrement(ctx, tx, store.Meta{MessageID: msg, Type: "FLOP", Styp: "FLNO"},
			[]flight.Commands{{FLID: 2, Cmds: []flight.Command{set("FLNO", "CA2-B")}}})
		return err
	})
	mark = log.mark()
	batch(map[flight.FLID][]flight.Command{2: {set("ESTT", "09SEP261000")}})
	if n := log.since(mark, "FROM flight_gate"); n == 0 {
		t.Error("a flight changed by another writer was not reloaded")
	}
	if got, _ := read(2); got.Scalars["FLNO"] != "CA2-B" || got.Scalars["ESTT"] != "09SEP261000" {
		t.Errorf("flight 2 lost the other writer's change: %+v", got.Scalars)
	}

	// Deleted elsewhere: the FLID is a new flight, nothing of the cached
	// state comes back.
	elsewhere(func(tx *store.Tx) error {
		msg++
		_, err := storetest.DeleteFlights(ctx, tx, store.Meta{MessageID: msg, Type: "FLOP", Styp: "FDEL"}, []flight.FLID{1})
		return err
	})
	if created := batch(map[flight.FLID][]flight.Command{1: {set("FLNO", "CA1-NEW")}}); !slices.Equal(created, []flight.FLID{1}) {
		t.Errorf("created %v after a delete elsewhere, want flight 1 created anew", created)
	}
	got, ok := read(1)
	if !ok || got.Scalars["FLNO"] != "CA1-NEW" || got.Scalars["ESTT"] != "" || len(got.Lists["GTDT"]) != 0 {
		t.Errorf("flight 1 re-created from a stale cache entry: %+v", got)
	}

	// A rolled-back batch is never kept: the cache still names committed
	// versions only, so the next batch sees the database's state.
	tx, err := s.Begin(ctx, epoch)
	if err != nil {
		t.Fatal(err)
	}
	pre, err := tx.Prefetch(ctx, store.PrefetchRequest{FLIDs: []flight.FLID{2}, Versions: 1, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pre.Set.Increment(store.Meta{MessageID: 999, Type: "FLOP", Styp: "FLNO"},
		[]flight.Commands{{FLID: 2, Cmds: []flight.Command{set("FLNO", "ROLLED-BACK")}}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.FinishBatch(ctx, nil, pre.Set, nil); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	batch(map[flight.FLID][]flight.Command{2: {set("STND", "101")}})
	if got, _ := read(2); got.Scalars["FLNO"] != "CA2-B" || got.Scalars["STND"] != "101" {
		t.Errorf("flight 2 after a rolled-back batch: %+v", got.Scalars)
	}
}
