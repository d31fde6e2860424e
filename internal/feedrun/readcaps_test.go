package feedrun

import (
	"math"
	"testing"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/store"
)

// defaultFeed is a feed with the defaults applied.
func defaultFeed(t *testing.T, dbConns int32) *config.Feed {
	t.Helper()
	spec := v1alpha1.FlightFeedSpec{}
	config.SetDefaults(&spec)
	spec.Database.MaxConns = dbConns
	return &config.Feed{Spec: spec}
}

// The read bounds of a feed's database and mailbox connections, added
// up, fit in the pod's memory limit: FitReadCaps lowers
// maxMessageBytes and maxBatchBytes (and the database connections' cap)
// until they take at most readCapShare of it, and changes nothing when
// they already fit or no limit is known. The sum is measured with the
// adapters' own bound functions, so it is what the connections enforce.
func TestReadCapsFitTheMemoryLimit(t *testing.T) {
	const mib = int64(1) << 20
	for _, tc := range []struct {
		name      string
		limit     int64
		dbConns   int32
		unchanged bool
	}{
		{"no limit", math.MaxInt64, 4, true},
		{"the chart's 512 MiB container (GOMEMLIMIT 85%)", 512 * mib * 85 / 100, 4, true},
		{"2 GiB, 16 database connections", 2048 * mib, 16, true},
		{"256 MiB", 256 * mib, 4, false},
		{"128 MiB, 8 database connections", 128 * mib, 8, false},
		{"512 MiB, 64 database connections", 512 * mib, 64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			feed := defaultFeed(t, tc.dbConns)
			before := feed.Spec.Mailbox
			caps := FitReadCaps(feed, tc.limit)
			mb := feed.Spec.Mailbox
			if tc.unchanged {
				if caps.Lowered || mb != before || caps.StoreReadCap != 0 {
					t.Fatalf("caps %+v changed a feed that fits", caps)
				}
				if tc.limit != math.MaxInt64 && float64(caps.Sum) > float64(tc.limit)*readCapShare {
					t.Fatalf("sum %d over %v of %d, yet unchanged", caps.Sum, readCapShare, tc.limit)
				}
				return
			}
			if !caps.Lowered || mb.MaxMessageBytes >= before.MaxMessageBytes || mb.MaxBatchBytes > mb.MaxMessageBytes {
				t.Fatalf("caps %+v: maxMessageBytes %d (was %d), maxBatchBytes %d", caps, mb.MaxMessageBytes, before.MaxMessageBytes, mb.MaxBatchBytes)
			}
			// What the connections would hold at most, measured as they
			// bound themselves.
			perDB := min(store.MessageBound(mb.MaxMessageBytes), caps.StoreReadCap)
			sum := int64(tc.dbConns)*perDB + mailbox.MaxConns*mailbox.ConnReadBound(mb)
			if sum != caps.Sum || float64(sum) > float64(tc.limit)*readCapShare {
				t.Fatalf("connections hold up to %d (reported %d), more than %v of the limit %d", sum, caps.Sum, readCapShare, tc.limit)
			}
			// A database message of the new maximum still fits its cap.
			if caps.StoreReadCap < mb.MaxMessageBytes+store.MessageMargin {
				t.Fatalf("store cap %d below a message of %d", caps.StoreReadCap, mb.MaxMessageBytes)
			}
		})
	}
	// Without the fit (the code before the read caps), 256 MiB: 4 × 41 MiB +
	// 4 × 42 MiB does not fit.
	feed := defaultFeed(t, 4)
	sum := 4*store.MessageBound(feed.Spec.Mailbox.MaxMessageBytes) + mailbox.MaxConns*mailbox.ConnReadBound(feed.Spec.Mailbox)
	if float64(sum) <= float64(256*mib)*readCapShare {
		t.Fatalf("the defaults' sum %d fits 256 MiB: the case above proves nothing", sum)
	}
}
