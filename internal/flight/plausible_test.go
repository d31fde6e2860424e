package flight

import (
	"slices"
	"testing"
	"time"
)

func TestImplausibleTimes(t *testing.T) {
	loc := time.FixedZone("Asia/Shanghai", 8*3600)
	year := 365 * 24 * time.Hour
	state := func(day string, scalars ...string) State {
		s := NewState(1)
		s.OperationDay = day
		for i := 0; i+1 < len(scalars); i += 2 {
			s.Scalars[scalars[i]] = scalars[i+1]
		}
		return s
	}
	cases := []struct {
		name string
		s    State
		want []string
	}{
		{"no day, no SODT", state("", "NAAT", "01JAN000000"), nil},
		{"on its day", state("2026-09-09", "NAAT", "09SEP261015", "NEAT", "10SEP260130", "CNCL", "01SEP260900"), nil},
		{"year 2000 typo", state("2026-09-09", "NAAT", "01JAN000000"), []string{"NAAT"}},
		{"day from SODT", state("", "SODT", "09SEP260800", "CNCL", "09SEP991200", "NEAT", "09SEP261200"), []string{"CNCL"}},
		{"just inside a year", state("2026-09-09", "NEAT", "09SEP270000"), nil},
		{"all three", state("2026-09-09", "CNCL", "01JAN000000", "NAAT", "01JAN000000", "NEAT", "31DEC991200"), []string{"CNCL", "NAAT", "NEAT"}},
		{"unparsable ignored", state("2026-09-09", "NAAT", "garbage"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ImplausibleTimes(c.s, loc, year); !slices.Equal(got, c.want) {
				t.Fatalf("ImplausibleTimes = %v, want %v", got, c.want)
			}
		})
	}
}

func TestDayEnd(t *testing.T) {
	loc := time.FixedZone("Asia/Shanghai", 8*3600)
	s := NewState(1)
	if _, ok := DayEnd(s, loc); ok {
		t.Fatal("a flight without day or SODT has a day end")
	}
	s.Scalars["SODT"] = "09SEP262330"
	end, ok := DayEnd(s, loc)
	if want := time.Date(2026, 9, 10, 0, 0, 0, 0, loc); !ok || !end.Equal(want) {
		t.Fatalf("day end from SODT = %s, want %s", end, want)
	}
	s.OperationDay = "2026-09-08" // the operation day wins over SODT's day
	end, _ = DayEnd(s, loc)
	if want := time.Date(2026, 9, 9, 0, 0, 0, 0, loc); !end.Equal(want) {
		t.Fatalf("day end from the operation day = %s, want %s", end, want)
	}
}
