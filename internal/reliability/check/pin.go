package check

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
)

// updatePinned rewrites the pinned clean runs (testdata/day-N.pinned)
// from the clean run of this test instead of comparing with them: run one
// scenario package per workload size with it, then review the diff.
var updatePinned = flag.Bool("update-clean-run", false,
	"rewrite internal/reliability/check/testdata/day-N.pinned from this clean run instead of comparing with it")

// Pinned renders what a clean run of the workload must contain, in terms
// that do not depend on the day it ran: per mailbox row its written-back
// result and note, its processing record (status, reason, note, flags)
// and the number of notices the message published; per exported flight
// its document (STATE_VERSION and UPDATED_AT masked); the ledger. Days
// and FLIDs are written relative to the workload's day (mask): the same
// workload run on another day renders the same text.
func (e Expected) Pinned(o Outcome) string {
	m := e.mask
	var b strings.Builder
	fmt.Fprintf(&b, "# The clean run of the reliability workload (check.Day) of %d rows, pinned.\n", e.Rows)
	b.WriteString("# Days are {D} relative to the workload's day, FLIDs F+n from its first flight's.\n")
	b.WriteString("# Regenerate: go test -tags reliability ./internal/reliability/<scenario>/ -update-clean-run (review the diff).\n")
	b.WriteString("# row <id>: <mailbox result> <note> | proc_state <status> <reason> <note> <flags> | notices <n>\n")
	notices := noticesPerMessage(o.Notice)
	proc := map[int64]string{}
	for _, line := range o.ProcState {
		id, rest, _ := strings.Cut(line, " ")
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			fmt.Fprintf(&b, "proc_state line without an id: %s\n", m.apply(line))
			continue
		}
		proc[n] = rest
	}
	for _, r := range o.Mailbox {
		result := r.Result
		if !r.Processed {
			result = "(not processed)"
		}
		p, ok := proc[r.ID]
		if !ok {
			p = "(none)"
		}
		delete(proc, r.ID)
		fmt.Fprintf(&b, "row %d: %s %q | proc_state %s | notices %d\n", r.ID, result, m.apply(r.Note), m.apply(p), notices[r.ID])
		delete(notices, r.ID)
	}
	for _, id := range sortedKeys(proc) {
		fmt.Fprintf(&b, "proc_state of no mailbox row %d: %s\n", id, m.apply(proc[id]))
	}
	for _, id := range sortedKeys(notices) {
		fmt.Fprintf(&b, "notices of no mailbox row %d: %d\n", id, notices[id])
	}
	b.WriteString("# export, one flight a line\n")
	for _, flid := range sortedKeys(o.Export) {
		fmt.Fprintf(&b, "%s\n", m.apply(Mask(o.Export[flid])))
	}
	b.WriteString("# ledger\n")
	for _, line := range o.Ledger {
		fmt.Fprintf(&b, "%s\n", m.apply(line))
	}
	return b.String()
}

// noticesPerMessage counts the distinct notices (a key and its value)
// each message (MSG_ID) published.
func noticesPerMessage(records []dispatchtest.Record) map[int64]int {
	seen := map[string]bool{}
	out := map[int64]int{}
	for _, r := range records {
		id := r.Key + "\x00" + string(r.Value)
		if seen[id] {
			continue // a redelivery
		}
		seen[id] = true
		var doc struct {
			MsgID int64 `json:"MSG_ID"`
		}
		_ = json.Unmarshal(r.Value, &doc) // a notice without MSG_ID counts under 0
		out[doc.MsgID]++
	}
	return out
}

// CheckPinned compares the clean run o with the workload's pinned
// rendering (Pinned, testdata/day-N.pinned beside this package), or
// writes it there with -update-clean-run.
func (e Expected) CheckPinned(o Outcome) error {
	got := e.Pinned(o)
	path := pinnedPath(e.Rows)
	if *updatePinned {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return fmt.Errorf("write the pinned clean run: %w", err)
		}
		if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
			return fmt.Errorf("write the pinned clean run: %w", err)
		}
		return nil
	}
	want, err := os.ReadFile(path) //nolint:gosec // this package's own testdata
	if err != nil {
		return fmt.Errorf("the pinned clean run (run a scenario with -update-clean-run to write it): %w", err)
	}
	if diff := pinnedDiff(got, string(want)); diff != "" {
		return fmt.Errorf("the clean run differs from the workload's pinned outcome %s (if the change is meant, rerun with -update-clean-run and review the diff):\n%s",
			path, diff)
	}
	return nil
}

// pinnedPath is testdata/day-N.pinned in this package's folder.
func pinnedPath(rows int) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", fmt.Sprintf("day-%d.pinned", rows))
}

// pinnedDiff lists the lines only one of got and want has, at most
// MaxProblems of each, with "" when they are equal.
func pinnedDiff(got, want string) string {
	if got == want {
		return ""
	}
	var b strings.Builder
	only := func(sign string, this, that []string) {
		left := map[string]int{}
		for _, l := range that {
			left[l]++
		}
		n := 0
		for _, l := range this {
			switch {
			case left[l] > 0:
				left[l]--
			case n < MaxProblems:
				b.WriteString(sign + l + "\n")
				n++
			default:
				n++
			}
		}
		if n > MaxProblems {
			fmt.Fprintf(&b, "%s… and %d more lines\n", sign, n-MaxProblems)
		}
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	only("- pinned only:    ", w, g)
	only("+ this run only:  ", g, w)
	if b.Len() == 0 {
		b.WriteString("the same lines in another order\n")
	}
	return b.String()
}

// dayMask rewrites what depends on the day a workload ran: the day and
// the days around it in the forms the feed writes them (2006-01-02, the
// SIS time's 02JAN06, the META time's 20060102) as {D-1} … {D+2}, and
// FLIDs of the simulator's range for the day (its first flight's FLID
// base+1, the ad-hoc one base+1000+n) as F+n.
type dayMask struct {
	days *strings.Replacer
	base int64
}

// flidRange bounds the FLIDs of one day's workload above its base (the
// simulator's FLIDs are base + a number below 100,000).
const flidRange = 100_000

var digits = regexp.MustCompile(`\d+`)

func newDayMask(day string, loc *time.Location, firstFLID int64) dayMask {
	if loc == nil {
		loc = time.FixedZone("Asia/Shanghai", 8*3600)
	}
	d, err := time.ParseInLocation(time.DateOnly, day, loc)
	if err != nil {
		return dayMask{days: strings.NewReplacer(), base: firstFLID - 1}
	}
	var pairs []string
	for k := -1; k <= 2; k++ {
		dk := d.AddDate(0, 0, k)
		name := "{D}"
		if k != 0 {
			name = fmt.Sprintf("{D%+d}", k)
		}
		pairs = append(pairs, dk.Format(time.DateOnly), name, strings.ToUpper(dk.Format("02Jan06")), name, dk.Format("20060102"), name)
	}
	return dayMask{days: strings.NewReplacer(pairs...), base: firstFLID - 1}
}

func (m dayMask) apply(s string) string {
	if m.days == nil {
		return s
	}
	s = digits.ReplaceAllStringFunc(s, func(n string) string {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v <= m.base || v >= m.base+flidRange {
			return n
		}
		return "F+" + strconv.FormatInt(v-m.base, 10)
	})
	return m.days.Replace(s)
}

// firstFLID is the first FLID the body names (0 when none).
func firstFLID(body string) int64 {
	m := flidTag.FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}
