// Package rounds is what the benchmarks that compare two binaries share:
// the order the binaries run in each round (alternating, so that neither
// always runs on the warmer or the busier machine), the median of a figure
// over the rounds, and the ratio of two medians.
package rounds

import (
	"math"
	"slices"
)

// Order is the order the binaries run in round r (counted from 1): the
// baseline first in odd rounds, the binary under test first in even ones.
// Without a baseline only the binary under test runs.
func Order(r int, baseline bool) []string {
	if !baseline {
		return []string{"test"}
	}
	if r%2 == 0 {
		return []string{"test", "baseline"}
	}
	return []string{"baseline", "test"}
}

// Median is the median of get over ds (0 for none); a round that could
// not measure the figure gives NaN and is left out (NaN when every round
// is).
func Median[T any](ds []T, get func(T) float64) float64 {
	v := make([]float64, 0, len(ds))
	for _, d := range ds {
		if x := get(d); !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	slices.Sort(v)
	switch {
	case len(ds) > 0 && len(v) == 0:
		return math.NaN()
	case len(v) == 0:
		return 0
	case len(v)%2 == 1:
		return v[len(v)/2]
	default:
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
}

// Ratio is x / y, 0 when y is.
func Ratio(x, y float64) float64 {
	if y == 0 {
		return 0
	}
	return x / y
}
