package pump_test

import (
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// A lifecycle Job names exactly one job: a store must not guess which of
// two it was asked for, nor run none.
func TestJobNamesExactlyOneJob(t *testing.T) {
	t.Parallel()
	cut := &pumpdata.HistoryCutoffs{}
	day := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		job  pump.Job
		ok   bool
	}{
		{"history", pump.Job{History: cut, Limit: 500}, true},
		{"NULL-day retention", pump.Job{NullDayBefore: day, Limit: 500}, true},
		{"ledger retention", pump.Job{LedgerBefore: "2026-09-01"}, true},
		{"none", pump.Job{Limit: 500}, false},
		{"history and ledger", pump.Job{History: cut, LedgerBefore: "2026-09-01"}, false},
		{"NULL-day and ledger", pump.Job{NullDayBefore: day, LedgerBefore: "2026-09-01"}, false},
		{"all three", pump.Job{History: cut, NullDayBefore: day, LedgerBefore: "2026-09-01"}, false},
	}
	for _, c := range cases {
		if err := c.job.Check(); (err == nil) != c.ok {
			t.Errorf("%s: Check() = %v, want ok %v", c.name, err, c.ok)
		}
	}
}
