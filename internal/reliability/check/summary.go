package check

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// SummaryEnv names a file each Record call appends its summary line to
// (`make reliability` sets it and prints the file at the end): the
// figures of docs/reliability.md.
const SummaryEnv = "FLIGHTFEED_RELIABILITY_SUMMARY"

// Summary is one scenario's figures.
type Summary struct {
	// Scenario names it: "crash/after-commit".
	Scenario string
	// Runs counts the pump processes started on the faulted feed (each
	// crash and the final drain); Faults the faults injected (crashes,
	// kills, cuts); Messages the mailbox rows of the workload.
	Runs, Faults, Messages int
	Counts
}

// String is the summary's one line.
func (s Summary) String() string {
	return fmt.Sprintf("reliability %s: runs %d, faults injected %d, messages %d, lost %d, regressions %d, duplicated effects %d, redelivered %d",
		s.Scenario, s.Runs, s.Faults, s.Messages, s.Lost, s.Regressions, s.Duplicated, s.Redelivered)
}

// Add sums two summaries' figures under s's name (Messages too: the
// messages each run went through).
func (s Summary) Add(d Summary) Summary {
	return Summary{Scenario: s.Scenario, Runs: s.Runs + d.Runs, Faults: s.Faults + d.Faults, Messages: s.Messages + d.Messages,
		Counts: s.Counts.Add(d.Counts)}
}

var summaryFile sync.Mutex

// Record logs the summary's line on t and, when SummaryEnv names a file,
// appends it there.
func Record(t testing.TB, s Summary) {
	t.Helper()
	t.Log(s.String())
	path := os.Getenv(SummaryEnv)
	if path == "" {
		return
	}
	summaryFile.Lock()
	defer summaryFile.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644) //nolint:gosec // the caller's own output path
	if err != nil {
		t.Errorf("%s: %v", SummaryEnv, err)
		return
	}
	if _, err := fmt.Fprintln(f, s.String()); err != nil {
		t.Errorf("%s: %v", SummaryEnv, err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("%s: %v", SummaryEnv, err)
	}
}
