package flight

import "time"

// HistoryTimeTags are the SIS times that can end a flight's current state
// (processing rules R8.1), besides its SODT.
var HistoryTimeTags = [...]string{"CNCL", "NAAT", "NEAT"}

// DayEnd is the end of the flight's day, the anchor of every history rule:
// the end of its operation day or, while it has none, of the airport-local
// day of its SODT. ok is false when the flight has neither.
func DayEnd(s State, loc *time.Location) (time.Time, bool) {
	day := s.OperationDay
	if day == "" {
		var err error
		if day, err = OperationDayOf(s.Scalars["SODT"], loc); err != nil {
			return time.Time{}, false
		}
	}
	d, err := time.ParseInLocation(time.DateOnly, day, loc)
	if err != nil {
		return time.Time{}, false
	}
	return d.AddDate(0, 0, 1), true
}

// ImplausibleTimes lists the history times of s (HistoryTimeTags, in that
// order) that are farther than window from the end of its day: kept as
// sent, but they must not decide when the flight becomes history. Times
// that do not parse are not listed (they were refused on input). Nil
// without a day to compare with.
func ImplausibleTimes(s State, loc *time.Location, window time.Duration) []string {
	end, ok := DayEnd(s, loc)
	if !ok {
		return nil
	}
	var out []string
	for _, tag := range HistoryTimeTags {
		v, ok := s.Scalars[tag]
		if !ok {
			continue
		}
		t, err := ParseSISTime(v, loc)
		if err != nil {
			continue
		}
		if d := t.Sub(end); d > window || d < -window {
			out = append(out, tag)
		}
	}
	return out
}
