package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// chunkSource is a store.RecordSource over records that counts what the
// store asks for.
type chunkSource struct {
	records  []store.SnapshotRecord
	chunks   int
	largest  int
	nextFrom int
	t        *testing.T
}

func (s *chunkSource) Len() int { return len(s.records) }

func (s *chunkSource) Key(i int) (flight.FLID, string) {
	return s.records[i].Cmds.FLID, s.records[i].Day
}

func (s *chunkSource) Chunk(lo, hi int) ([]store.SnapshotRecord, error) {
	if lo != s.nextFrom {
		s.t.Errorf("chunk %d–%d asked for after one that ended at %d: records are read once, in order", lo, hi, s.nextFrom)
	}
	s.nextFrom = hi
	s.chunks++
	s.largest = max(s.largest, hi-lo)
	return s.records[lo:hi], nil
}

// A snapshot applied a few records at a time, its records handed over by
// a RecordSource chunk by chunk, writes exactly what the same snapshot
// applied whole writes: flights, versions, events in their order, roster,
// ledger and effect — for a first full day, a second that changes, keeps
// and diff-deletes flights, a window, and a skip-conflicts replay.
// (Not parallel: it sets the package's chunk size.)
func TestChunkedSnapshotWritesWhatAWholeOneWrites(t *testing.T) {
	const chunk = 3
	at := time.Date(2026, 9, 9, 6, 0, 0, 0, time.UTC)
	open := func() *fixture {
		db := storetest.New(t, store.Options{Location: shanghai, Clock: clocktesting.NewFakePassiveClock(at)})
		return &fixture{t: t, store: db.Store, conn: db.Conn, epoch: db.Epoch}
	}
	whole, chunked := open(), open()

	full := func(ids []int, variant func(int) int) []store.SnapshotRecord {
		var out []store.SnapshotRecord
		for _, i := range ids {
			out = append(out, storetest.FullRecord(flight.FLID(500+i), day9, i, fmt.Sprintf("A%d", variant(i)), i%2 == 0))
		}
		return out
	}
	span := func(lo, hi int) []int {
		var out []int
		for i := lo; i < hi; i++ {
			out = append(out, i)
		}
		return out
	}
	steps := []struct {
		name string
		snap store.Snapshot
	}{
		{"first full day", store.Snapshot{FullDay: true, Day: day9, Records: full(span(0, 20), func(int) int { return 1 })}},
		{"second full day: 5 gone, 1 in 4 changed", store.Snapshot{FullDay: true, Day: day9,
			Records: full(span(5, 26), func(i int) int { return 1 + min(i%4, 1) })}},
		{"window", store.Snapshot{Records: full([]int{7, 8, 30, 31, 32}, func(int) int { return 3 })}},
		{"skip-conflicts replay over a flight of day 10", store.Snapshot{FullDay: true, Day: day9, SkipConflicts: true,
			Records: append(full(span(10, 17), func(int) int { return 4 }), storetest.Record(900, "ZZ1", day9))}},
	}
	// Flight 900 belongs to day 10 before the last step.
	for _, f := range []*fixture{whole, chunked} {
		f.mustSnapshot(day10, storetest.Record(900, "ZZ1", day10))
	}

	restore := store.SetSnapshotChunk(chunk)
	defer restore()
	for _, step := range steps {
		src := &chunkSource{records: step.snap.Records, t: t}
		apply := func(f *fixture, snap store.Snapshot) store.SnapshotEffect {
			meta := f.nextMeta("SCHD", "RESP")
			var out store.SnapshotEffect
			if err := f.inTx(func(tx *store.Tx) error {
				var err error
				out, err = tx.ApplySnapshot(context.Background(), meta, snap)
				return err
			}); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			return out
		}
		restoreWhole := store.SetSnapshotChunk(1 << 20)
		wantOut := apply(whole, step.snap)
		restoreWhole()
		viaSource := step.snap
		viaSource.Records, viaSource.Source = nil, src
		gotOut := apply(chunked, viaSource)

		if want := (len(step.snap.Records) + chunk - 1) / chunk; src.chunks != want || src.largest > chunk {
			t.Fatalf("%s: %d chunks of at most %d records read, want %d of at most %d", step.name, src.chunks, src.largest, want, chunk)
		}
		if diff := cmp.Diff(wantOut, gotOut); diff != "" {
			t.Fatalf("%s: effect (-whole +chunked):\n%s", step.name, diff)
		}
		if diff := cmp.Diff(whole.flights(), chunked.flights()); diff != "" {
			t.Fatalf("%s: flights (-whole +chunked):\n%s", step.name, diff)
		}
		if diff := cmp.Diff(whole.events(whole.msgID), chunked.events(chunked.msgID)); diff != "" {
			t.Fatalf("%s: events (-whole +chunked):\n%s", step.name, diff)
		}
		if diff := cmp.Diff(whole.roster(day9), chunked.roster(day9)); diff != "" {
			t.Fatalf("%s: roster (-whole +chunked):\n%s", step.name, diff)
		}
		if w, c := whole.version(day9), chunked.version(day9); w != c {
			t.Fatalf("%s: day version %d whole, %d chunked", step.name, w, c)
		}
		if step.name == "second full day: 5 gone, 1 in 4 changed" && (len(gotOut.Deleted) != 5 || gotOut.Unchanged == 0 || gotOut.Upserted == 0) {
			t.Fatalf("%s: the step does not delete, keep and change flights: %+v", step.name, gotOut)
		}
		if step.snap.SkipConflicts && len(gotOut.Skipped) != 1 {
			t.Fatalf("%s: skipped %v, want flight 900", step.name, gotOut.Skipped)
		}
	}
}
