//go:build reliability

package partition_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// TestTwoPumpsOnOneConfig: two `flightfeed pump` processes on one
// --config, no Kubernetes. pump-a drains the first third; pump-b starts
// on the same config and takes the fencing epoch; pump-a is fenced at its
// next transaction, stops and names the pump that holds the feed; pump-b
// drains the rest. Exactly one makes progress from pump-b's start on (the
// write audit), and the end equals the clean run.
func TestTwoPumpsOnOneConfig(t *testing.T) {
	t.Parallel()
	want := reference(t)
	rows, base := workload(t)
	f := newFeed(t, "two-pumps")
	third := len(rows) / 3
	f.Put(rows[:third], base)

	a := start(t, "pump-a", nil, "pump", "--config", f.Config, "--identity", "pump-a")
	await.EventuallyEvery(t, "pump-a to process the first third", waitLong, poll, func() (bool, string) {
		if a.Exited() {
			t.Fatalf("pump-a exited: %v\n%s", a.Err(), proctest.Tail(a.Output(), 40))
		}
		n := f.Processed()
		return n >= third, fmt.Sprint(n)
	})
	_, epochA := f.lock()

	// The rest arrives while both run.
	b := start(t, "pump-b", nil, "pump", "--config", f.Config, "--identity", "pump-b", "--drain")
	for from := third; from < len(rows); from += 50 {
		f.Put(rows[from:min(from+50, len(rows))], base.Add(time.Duration(from)*time.Millisecond))
	}
	err := a.Wait()
	if err == nil {
		t.Fatalf("pump-a ended without error while pump-b took the feed")
	}
	said := a.Output()
	if !strings.Contains(said, "another pump took over this feed's database") || !strings.Contains(said, `"pump-b"`) {
		t.Errorf("pump-a did not say that pump-b holds the feed; it said:\n%s", proctest.Tail(said, 10))
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("pump-b's drain failed: %v\n%s", err, proctest.Tail(b.Output(), 40))
	}
	holder, epochB := f.lock()
	if holder != "pump-b" || epochB <= epochA {
		t.Fatalf("pipeline_lock %s@%d, want pump-b at an epoch above pump-a's %d", holder, epochB, epochA)
	}

	// Exactly one makes progress: from pump-b's first write on, every
	// fenced write is pump-b's.
	first := int64(-1)
	var byA, byB int
	for _, w := range f.Audit() {
		switch w.App {
		case "pump-b":
			byB++
			if first < 0 {
				first = w.ID
			}
		case "pump-a":
			byA++
			if first >= 0 {
				t.Errorf("pump-a wrote after pump-b had taken the feed: %s", w)
			}
			if w.Epoch != epochA {
				t.Errorf("pump-a wrote at epoch %d, not its own %d: %s", w.Epoch, epochA, w)
			}
		}
	}
	if byA == 0 || byB == 0 {
		t.Fatalf("writes: pump-a %d, pump-b %d: both must have written for the test to prove anything", byA, byB)
	}

	r := check.Compare(want, check.Read(t, f.Feed))
	r.Assert(t, "two pumps")
	check.Record(t, check.Summary{Scenario: "partition/two-pumps-one-config", Runs: 2, Faults: 1, Messages: len(rows), Counts: r.Counts})
	t.Logf("pump-a (epoch %d) made %d fenced writes, then stopped: %v; pump-b (epoch %d) made %d and drained",
		epochA, byA, lastError(a), epochB, byB)
}

// lastError is the process's last error line, for the log.
func lastError(p *proctest.Proc) string {
	lines := strings.Split(strings.TrimSpace(p.Output()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "flightfeed:") {
			return lines[i]
		}
	}
	return fmt.Sprint(p.Err())
}
