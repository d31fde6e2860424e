package store

import (
	"slices"
	"testing"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// The roster's joiners go to a statement that does not see its own rows:
// each flight once, at its first place, as ON CONFLICT DO NOTHING kept it.
func TestFirstOfEach(t *testing.T) {
	for _, c := range []struct{ in, want []flight.FLID }{
		{nil, nil},
		{[]flight.FLID{3, 1, 2}, []flight.FLID{3, 1, 2}},
		{[]flight.FLID{3, 1, 3, 2, 1, 4}, []flight.FLID{3, 1, 2, 4}},
		{[]flight.FLID{5, 5, 5}, []flight.FLID{5}},
	} {
		in := slices.Clone(c.in)
		if got := firstOfEach(in); !slices.Equal(got, c.want) {
			t.Errorf("firstOfEach(%v) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("firstOfEach changed its argument: %v, was %v", in, c.in)
		}
	}
}
