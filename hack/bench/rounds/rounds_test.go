package rounds

import (
	"math"
	"slices"
	"testing"
)

func TestMedianRatioAndOrder(t *testing.T) {
	id := func(f float64) float64 { return f }
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in, id); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	// A round that could not time its drain (NaN) is left out, not sorted
	// first: {NaN, 5, 1, 3} has the median of {5, 1, 3}.
	if got := Median([]float64{math.NaN(), 5, 1, 3}, id); got != 3 {
		t.Errorf("Median with an untimed round = %v, want 3", got)
	}
	if got := Median([]float64{math.NaN()}, id); !math.IsNaN(got) {
		t.Errorf("Median of untimed rounds only = %v, want NaN", got)
	}
	if Ratio(1, 0) != 0 || Ratio(3, 2) != 1.5 {
		t.Errorf("Ratio: %v %v", Ratio(1, 0), Ratio(3, 2))
	}
	if a, b := Order(1, true), Order(2, true); a[0] != "baseline" || b[0] != "test" || a[1] != b[0] {
		t.Errorf("Order(1) = %v, Order(2) = %v: the order must alternate", a, b)
	}
	if got := Order(2, false); !slices.Equal(got, []string{"test"}) {
		t.Errorf("Order without a baseline = %v, want only the binary under test", got)
	}
}
