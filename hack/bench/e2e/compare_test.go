package main

import "testing"

func TestMedianAndRunOrder(t *testing.T) {
	id := func(f float64) float64 { return f }
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in, id); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if ratio(1, 0) != 0 || ratio(3, 2) != 1.5 {
		t.Errorf("ratio: %v %v", ratio(1, 0), ratio(3, 2))
	}
	if a, b := runOrder(1), runOrder(2); a[0] != "baseline" || b[0] != "test" || a[1] != b[0] {
		t.Errorf("runOrder(1) = %v, runOrder(2) = %v: the order must alternate", a, b)
	}
}
