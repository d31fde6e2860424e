package pump_test

import (
	"time"

	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
)

// newMemStore is a feed database in memory on the tests' "now" (testNow),
// failing as faults say.
func newMemStore(faults ...*pumptest.Fault) *pumptest.Store {
	return pumptest.NewStore(func() time.Time { return testNow }, faults...)
}
