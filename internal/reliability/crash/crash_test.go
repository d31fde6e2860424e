//go:build reliability

package crash_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// ModeEnv selects the mode: "full" crashes several times per point.
const ModeEnv = "FLIGHTFEED_RELIABILITY"

// messages is the size of the day every scenario runs.
const messages = 2000

// hits are the hit counts at which each point crashes the pump, one
// process after another: bounded mode takes the first only. Each count
// counts from its own process's start. The counts of a point add up to
// less than the hits of the whole day, so every armed process must crash
// (one that drains instead fails the scenario): with mailbox batches of at
// most 8 rows the day is at least 250 batches, each one decode, one
// commit and one write-back, and at least two status writes (after the
// commit and at the batch's end); a Kafka pass carried about 9 rows here
// (measured), so the Kafka counts stay under 50 passes. The crashes land
// early, at a restart's very first hits, and in the middle of the day.
var hits = map[string][]int{
	failpoint.AfterDecode:      {40, 1, 80, 30},
	failpoint.BeforeCommit:     {40, 1, 80, 30},
	failpoint.AfterCommit:      {40, 1, 80, 30},
	failpoint.AfterWriteBack:   {40, 1, 80, 30},
	failpoint.AfterKafkaCommit: {8, 1, 25, 12},
	failpoint.StatusWrite:      {200, 2, 150, 80},
}

func full() bool { return os.Getenv(ModeEnv) == "full" }

// TestCrashAtEveryFailPoint: for each fail point, the day's rows in a
// fresh feed, the pump crashed there (SIGKILL to itself, no cleanup) and
// restarted until an unarmed restart drains; the outcome equals the clean
// run's.
func TestCrashAtEveryFailPoint(t *testing.T) {
	bin := proctest.BinaryTagged(t, "reliability")
	day, loc := check.Today(t)
	rows := check.Day(day, loc, messages)
	base := time.Now().UTC().Truncate(time.Second)

	ref, err := check.CleanRun(t, bin, rows, base, check.ExpectDay(day, loc, messages))
	if err != nil {
		t.Fatal(err)
	}

	total := check.Summary{Scenario: "crash (all points)"}
	for _, point := range failpoint.Names() {
		counts := hits[point]
		if !full() {
			counts = counts[:1]
		}
		t.Run(point, func(t *testing.T) {
			s := crashScenario(t, bin, point, counts, rows, base, ref)
			check.Record(t, s)
			total = total.Add(s)
		})
	}
	total.Scenario = "crash (all points)"
	check.Record(t, total)
}

// crashScenario plays one point: an armed pump per count, each crashing
// there, then an unarmed drain; it compares the outcome with ref.
func crashScenario(t *testing.T, bin, point string, counts []int, rows []string, base time.Time, ref check.Outcome) check.Summary {
	w := check.NewWorld(t, point, bin, check.WorldOptions{})
	w.Put(rows, base)
	s := check.Summary{Scenario: "crash/" + point, Messages: len(rows)}
	var at []string
	for _, n := range counts {
		arming := fmt.Sprintf("%s@%d", point, n)
		p := start(t, w, arming)
		s.Runs++
		err := p.Wait()
		if err == nil {
			t.Fatalf("%s: the pump drained without reaching the fail point (%d of %d rows processed): the scenario proves nothing",
				arming, w.Processed(), len(rows))
		}
		if !killedAtPoint(err, p.Output(), point, n) {
			t.Fatalf("%s: the pump ended %v, not by the fail point\n%s", arming, err, proctest.Tail(p.Output(), 40))
		}
		s.Faults++
		at = append(at, fmt.Sprintf("%s: %d rows processed, %s", arming, w.Processed(), evidence(t, w, point)))
	}
	p := start(t, w, "")
	s.Runs++
	if err := p.Wait(); err != nil {
		t.Fatalf("%s: the unarmed restart failed: %v\n%s", point, err, proctest.Tail(p.Output(), 40))
	}
	r := check.Compare(ref, check.Read(t, w.Feed))
	r.Assert(t, point)
	s.Counts = r.Counts
	t.Logf("crashed at %s", strings.Join(at, "; "))
	return s
}

// evidence checks that the crash left what its step must leave: a
// committed batch not yet written back (after-commit, after-write-back:
// its intent is still there) or a committed Kafka transaction not yet
// marked delivered (after-kafka-commit: events pending). It returns the
// figures it read.
func evidence(t *testing.T, w *check.World, point string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, w.DatabaseDSN, store.Options{ReadOnly: true, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	backfills, err := st.CountBackfills(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pending, _, _, err := st.OutboxFigures(ctx)
	if err != nil {
		t.Fatal(err)
	}
	switch point {
	case failpoint.AfterCommit, failpoint.AfterWriteBack:
		if backfills == 0 {
			t.Errorf("%s: no backfill intent left by the crash: it did not land between commit and intent delete", point)
		}
	case failpoint.AfterKafkaCommit:
		if pending == 0 {
			t.Errorf("%s: no outbox event pending after the crash: it did not land between the Kafka commit and the delivered mark", point)
		}
	}
	return fmt.Sprintf("%d results not written back, %d events pending", backfills, pending)
}

// killedAtPoint reports whether the process died of SIGKILL having said
// that the fail point's n-th hit crashed it.
func killedAtPoint(err error, out, point string, n int) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL &&
		strings.Contains(out, fmt.Sprintf("failpoint: %s hit %d: crashing", point, n))
}

// start starts `flightfeed pump --config F --drain` on w with the fail
// points armed as arming ("" arms none).
func start(t *testing.T, w *check.World, arming string) *proctest.Proc {
	t.Helper()
	return w.Start(w.Name, true, []string{failpoint.Env + "=" + arming}, "--drain")
}
