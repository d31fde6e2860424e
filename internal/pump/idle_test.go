package pump_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// choreCounter is the memory database counting the pump's chores: the
// chores of an empty head look for results to write back once each time
// they run (retryBackfills), and nothing else of an idle step does.
type choreCounter struct {
	pump.Store
	chores atomic.Int64
}

func (c *choreCounter) Backfills(ctx context.Context, limit int) ([]pumpdata.Backfill, int64, error) {
	c.chores.Add(1)
	return c.Store.Backfills(ctx, limit)
}

// idlePump is a pump of h on a fake clock that moves only when the test
// steps it, counting its chores.
func idlePump(h *harness) (*pump.Pump, *clocktesting.FakeClock, *choreCounter) {
	fake := clocktesting.NewFakeClock(h.clock.Now())
	counter := &choreCounter{Store: h.mem}
	p := h.newPump(func(o *pump.Options) { o.Clock, o.Store = fake, counter })
	return p, fake, counter
}

// idleStep is one empty step of the loop; the clock then moves by the
// wait the step asked for, as the loop's sleep would.
func idleStep(t *testing.T, p *pump.Pump, fake *clocktesting.FakeClock) time.Duration {
	t.Helper()
	worked, wait, err := p.Step(t.Context())
	if err != nil || worked {
		t.Fatalf("empty step: worked %v, %v", worked, err)
	}
	fake.Step(wait)
	return wait
}

// An empty head is read every pollInterval, but the chores of an empty
// head (write-backs to retry, due requests and jobs, replays: queries
// of the database) run once a second of the clock, as between batches,
// not at every read.
func TestIdleChoresRunOnceASecond(t *testing.T) {
	t.Parallel()
	h := newMemHarness(t)
	h.feed.Spec.Mailbox.PollInterval.Duration = 100 * time.Millisecond
	p, fake, counter := idlePump(h)
	start := fake.Now()
	reads := 0
	for fake.Since(start) < 5*time.Second {
		idleStep(t, p, fake)
		reads++
	}
	seconds := int64(fake.Since(start) / time.Second)
	chores := counter.chores.Load()
	if reads < 40 {
		t.Fatalf("%d head reads in %v of the clock: the head is not read every pollInterval", reads, fake.Since(start))
	}
	if chores > seconds+1 {
		t.Fatalf("%d head reads over %ds of the clock ran the chores %d times, want at most once a second (%d)",
			reads, seconds, chores, seconds+1)
	}
	if chores < seconds {
		t.Fatalf("%d head reads over %ds of the clock ran the chores %d times, want once a second (%d)",
			reads, seconds, chores, seconds)
	}
}

// Once the head has stayed empty for 10 seconds of the clock it is read
// every mailbox.idlePollInterval (default 1s) instead of every
// pollInterval, with the chores at every read; the first row found brings
// the pump back to the fast interval at once. An idlePollInterval equal
// to pollInterval never backs off.
func TestIdleHeadBacksOff(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		poll, set time.Duration // set: mailbox.idlePollInterval (0: unset)
		idle      time.Duration // the wait once idle
	}{
		{"default", 100 * ms, 0, time.Second},
		{"set", 50 * ms, 2 * time.Second, 2 * time.Second},
		{"a long pollInterval is the default's floor", 3 * time.Second, 0, 3 * time.Second},
		{"equal to pollInterval: no backoff", 100 * ms, 100 * ms, 100 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newMemHarness(t)
			h.feed.Spec.Mailbox.PollInterval.Duration = tc.poll
			if tc.set != 0 {
				h.feed.Spec.Mailbox.IdlePollInterval = &metav1.Duration{Duration: tc.set}
			}
			p, fake, counter := idlePump(h)
			start := fake.Now()
			// Ten seconds of an empty head at pollInterval.
			for fake.Since(start) < 10*time.Second {
				if wait := idleStep(t, p, fake); wait != tc.poll {
					t.Fatalf("empty read %v after the start: wait %v, want pollInterval %v", fake.Since(start), wait, tc.poll)
				}
			}
			// Then at idlePollInterval, each read running the chores.
			for i := range 5 {
				before, at := counter.chores.Load(), fake.Since(start)
				if wait := idleStep(t, p, fake); wait != tc.idle {
					t.Fatalf("empty read %d after %v of an empty head: wait %v, want %v", i, at, wait, tc.idle)
				}
				if tc.idle >= time.Second && counter.chores.Load() != before+1 {
					t.Fatalf("empty read %d at idlePollInterval %v: chores ran %d times, want once", i, tc.idle, counter.chores.Load()-before)
				}
			}
			// The first row is applied by the next read, and the head is
			// read again soon after it.
			id := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
			if worked, _, err := p.Step(t.Context()); err != nil || !worked {
				t.Fatalf("step with row %d at the head: worked %v, %v", id, worked, err)
			}
			if wait := idleStep(t, p, fake); wait != max(tc.poll/16, ms) {
				t.Fatalf("empty read after a batch: wait %v, want %v", wait, max(tc.poll/16, ms))
			}
			// And an empty head backs off again only after another ten
			// seconds.
			batchAt := fake.Now()
			for fake.Since(batchAt) < 10*time.Second {
				if wait := idleStep(t, p, fake); wait > tc.poll {
					t.Fatalf("empty read %v after a batch: wait %v, want at most pollInterval %v", fake.Since(batchAt), wait, tc.poll)
				}
			}
			if wait := idleStep(t, p, fake); wait != tc.idle {
				t.Fatalf("empty read %v after a batch: wait %v, want %v", fake.Since(batchAt), wait, tc.idle)
			}
		})
	}
}
