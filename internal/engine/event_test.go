package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// newestStateOnly keeps the state on each flight's newest version among
// events written together, and every notice.
func TestNewestStateOnly(t *testing.T) {
	ev := func(flid flight.FLID, version int64, event string) Event {
		e := Event{FLID: flid, Version: version, Notice: "n"}
		if event != "" {
			e.Event, e.State = event, "s"
		}
		return e
	}
	for name, c := range map[string]struct{ in, want []Event }{
		"none":    {nil, nil},
		"one":     {[]Event{ev(1, 1, EventUpsert)}, []Event{ev(1, 1, EventUpsert)}},
		"flights": {[]Event{ev(1, 1, EventUpsert), ev(2, 2, EventUpsert)}, []Event{ev(1, 1, EventUpsert), ev(2, 2, EventUpsert)}},
		"three of one flight": {
			[]Event{ev(1, 1, EventUpsert), ev(1, 2, EventUpsert), ev(1, 3, EventUpsert)},
			[]Event{ev(1, 1, ""), ev(1, 2, ""), ev(1, 3, EventUpsert)},
		},
		"interleaved": {
			[]Event{ev(1, 1, EventUpsert), ev(2, 2, EventUpsert), ev(1, 3, EventUpsert), ev(3, 4, EventUpsert), ev(2, 5, EventDelete)},
			[]Event{ev(1, 1, ""), ev(2, 2, ""), ev(1, 3, EventUpsert), ev(3, 4, EventUpsert), ev(2, 5, EventDelete)},
		},
		"deleted and created again": {
			[]Event{ev(1, 1, EventUpsert), ev(1, 2, EventDelete), ev(1, 3, EventUpsert)},
			[]Event{ev(1, 1, ""), ev(1, 2, ""), ev(1, 3, EventUpsert)},
		},
		"newest first (versions, not positions, decide)": {
			[]Event{ev(1, 5, EventUpsert), ev(1, 4, EventUpsert)},
			[]Event{ev(1, 5, EventUpsert), ev(1, 4, "")},
		},
	} {
		t.Run(name, func(t *testing.T) {
			newestStateOnly(c.in)
			if diff := cmp.Diff(c.want, c.in); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}
