package flight

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// SISTimeLayout documents the SIS local time format: DDMONYYHHMM, e.g.
// 09SEP261015 (months in any letter case on input, upper case on output).
const SISTimeLayout = "02Jan061504"

// ErrBadSISTime is wrapped by every ParseSISTime failure.
var ErrBadSISTime = errors.New("bad SIS time")

var monthByName = map[string]time.Month{
	"JAN": time.January, "FEB": time.February, "MAR": time.March, "APR": time.April,
	"MAY": time.May, "JUN": time.June, "JUL": time.July, "AUG": time.August,
	"SEP": time.September, "OCT": time.October, "NOV": time.November, "DEC": time.December,
}

// ParseSISTime parses DDMONYYHHMM in the airport's location. The month name
// is case-insensitive ("16Nov200535" is 2020-11-16 05:35); YY is 2000+YY;
// surrounding white space is ignored. Impossible dates (31FEB…) are errors.
func ParseSISTime(s string, loc *time.Location) (time.Time, error) {
	if loc == nil {
		return time.Time{}, fmt.Errorf("%w: no location", ErrBadSISTime)
	}
	t := strings.TrimSpace(s)
	if len(t) != 11 {
		return time.Time{}, fmt.Errorf("%w: %q is not DDMONYYHHMM", ErrBadSISTime, s)
	}
	day, ok1 := digits2(t[0:2])
	month, ok2 := monthByName[strings.ToUpper(t[2:5])]
	year, ok3 := digits2(t[5:7])
	hour, ok4 := digits2(t[7:9])
	minute, ok5 := digits2(t[9:11])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return time.Time{}, fmt.Errorf("%w: %q is not DDMONYYHHMM", ErrBadSISTime, s)
	}
	if hour > 23 || minute > 59 || day < 1 || day > daysIn(month, 2000+year) {
		return time.Time{}, fmt.Errorf("%w: %q is out of range", ErrBadSISTime, s)
	}
	return time.Date(2000+year, month, day, hour, minute, 0, 0, loc), nil
}

// FormatSISTime renders t in loc as DDMONYYHHMM with an upper-case month.
func FormatSISTime(t time.Time, loc *time.Location) string {
	return strings.ToUpper(t.In(loc).Format(SISTimeLayout))
}

// OperationDayOf returns the "YYYY-MM-DD" day of a SIS local time string in
// the airport's location.
func OperationDayOf(sodt string, loc *time.Location) (string, error) {
	t, err := ParseSISTime(sodt, loc)
	if err != nil {
		return "", err
	}
	return t.Format(time.DateOnly), nil
}

func digits2(s string) (int, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
