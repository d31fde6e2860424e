package snapshot

import (
	"testing"
	"time"
)

func TestRecsDropped(t *testing.T) {
	cases := []struct {
		before, after, percent int
		want                   bool
	}{
		{100, 80, 20, false}, // exactly the share: not more than it
		{100, 79, 20, true},
		{100, 100, 20, false},
		{100, 120, 20, false},
		{5, 3, 20, true}, // 40 % of a small day
		{5, 4, 20, false},
		{10, 0, 20, true}, // emptied
		{0, 0, 20, false}, // no previous roster
		{3, 2, 50, false},
		{3, 1, 50, true},
		{10000, 9999, 1, false},
		{10, 0, 0, false},  // no share set: no alert
		{1, 0, 100, false}, // all of it is not more than 100 %
	}
	for _, c := range cases {
		if got := RecsDropped(c.before, c.after, c.percent); got != c.want {
			t.Errorf("RecsDropped(%d, %d, %d%%) = %v, want %v", c.before, c.after, c.percent, got, c.want)
		}
	}
}

func TestOutOfOrder(t *testing.T) {
	t0 := time.Date(2026, 9, 9, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		prev, sent time.Time
		want       bool
	}{
		{"older than the day's last", t0, t0.Add(-time.Second), true},
		{"same instant", t0, t0, false},
		{"newer", t0, t0.Add(time.Minute), false},
		{"no previous send time", time.Time{}, t0, false},
		{"no send time", t0, time.Time{}, false},
	}
	for _, c := range cases {
		if got := OutOfOrder(c.prev, c.sent); got != c.want {
			t.Errorf("%s: OutOfOrder = %v, want %v", c.name, got, c.want)
		}
	}
}
