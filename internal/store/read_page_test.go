package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// Keyset pages (After, Limit) with the day and updatedSince filters read
// exactly the flights a filter over the whole table selects, in the same
// order, page after page; EachFlight does the same in one transaction.
func TestReadFlightsPagesWithFiltersInSQL(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// FLIDs of the two days interleave; day 10 is written second, so its
	// flights have a later updated_at.
	var d9, d10 []store.SnapshotRecord
	for i := range 30 {
		d9 = append(d9, storetest.FullRecord(flight.FLID(100+2*i), day9, i, "A1", true))
		d10 = append(d10, storetest.FullRecord(flight.FLID(101+2*i), day10, i, "B1", false))
	}
	f.mustSnapshot(day9, d9...)
	f.mustSnapshot(day10, d10...)
	all, err := f.store.ReadFlights(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 60 {
		t.Fatalf("%d flights, want 60", len(all))
	}
	var later time.Time // day 10's updated_at
	for _, s := range all {
		if s.OperationDay == day10 {
			later = s.UpdatedAt
		}
	}
	if !later.After(all[0].UpdatedAt) {
		t.Fatalf("day 10 updated at %v, not after day 9's %v", later, all[0].UpdatedAt)
	}

	for _, tc := range []struct {
		name   string
		filter store.Filter
		keep   func(flight.State) bool
	}{
		{"everything", store.Filter{}, func(flight.State) bool { return true }},
		{"one day", store.Filter{Day: day9}, func(s flight.State) bool { return s.OperationDay == day9 }},
		{"updated since day 10's write", store.Filter{UpdatedSince: later}, func(s flight.State) bool { return !s.UpdatedAt.Before(later) }},
		// updated_at has microseconds: a bound half a microsecond after
		// day 10's write selects nothing (the driver alone would truncate
		// it to the write's own microsecond and select day 10).
		{"updated since half a microsecond after", store.Filter{UpdatedSince: later.Add(500 * time.Nanosecond)}, func(flight.State) bool { return false }},
		{"updated since half a microsecond before", store.Filter{UpdatedSince: later.Add(-500 * time.Nanosecond)}, func(s flight.State) bool { return s.OperationDay == day10 }},
		{"day and updated since", store.Filter{Day: day9, UpdatedSince: later}, func(flight.State) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []flight.State
			for _, s := range all {
				if tc.keep(s) {
					want = append(want, s)
				}
			}
			whole, err := f.store.ReadFlights(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, whole); diff != "" {
				t.Fatalf("one read (-want +got):\n%s", diff)
			}
			for _, size := range []int{1, 7, 60, 61} {
				var got []flight.State
				pf := tc.filter
				pf.Limit = size
				for pages := 0; ; pages++ {
					if pages > len(all) {
						t.Fatalf("page size %d: no end after %d pages", size, pages)
					}
					page, err := f.store.ReadFlights(ctx, pf)
					if err != nil {
						t.Fatal(err)
					}
					if len(page) > size {
						t.Fatalf("page size %d: %d flights", size, len(page))
					}
					got = append(got, page...)
					if len(page) < size {
						break
					}
					last := page[len(page)-1].FLID
					pf.After = &last
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("pages of %d (-want +got):\n%s", size, diff)
				}
				var each []flight.State
				if err := f.store.EachFlight(ctx, tc.filter, size, func(s flight.State) error {
					each = append(each, s)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, each); diff != "" {
					t.Fatalf("EachFlight by %d (-want +got):\n%s", size, diff)
				}
			}
		})
	}

	t.Run("a page reads its flights' collections, and only its flights", func(t *testing.T) {
		after := all[9].FLID
		page, err := f.store.ReadFlights(ctx, store.Filter{After: &after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(all[10:13], page); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		if len(page[0].Lists["GTDT"]) != 2 {
			t.Fatalf("GTDT of %d: %v", page[0].FLID, page[0].Lists["GTDT"])
		}
	})

	t.Run("EachFlight stops at fn's error and returns it", func(t *testing.T) {
		stop := errors.New("stop")
		n := 0
		err := f.store.EachFlight(ctx, store.Filter{}, 7, func(flight.State) error {
			n++
			if n == 10 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || n != 10 {
			t.Fatalf("EachFlight: %v after %d flights, want %v after 10", err, n, stop)
		}
		if err := f.store.EachFlight(ctx, store.Filter{}, 0, func(flight.State) error { return nil }); err == nil {
			t.Fatal("EachFlight with page size 0: no error")
		}
	})
}
