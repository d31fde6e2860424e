package check

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
)

// Counts are a run's figures against its reference.
type Counts struct {
	// Lost counts effects of the reference the run lacks or has
	// otherwise: a mailbox result, an exported flight, a ledger or
	// proc_state line, a notice; and what the run left undone: a
	// flight whose last state record is not its export, an outbox event
	// pending or parked, a result not written back.
	Lost int
	// Regressions counts records of a FLID that go back: a STATE_VERSION
	// lower than an earlier one of its FLID on the state topic, a FLID in
	// two partitions, an older notice after a newer one that is not a
	// re-send.
	Regressions int
	// Duplicated counts effects the reference does not have: a flight,
	// ledger or proc_state line it lacks, a notice of the same message and
	// change committed under more versions than in the reference (applied
	// twice).
	Duplicated int
	// Redelivered counts records on the topics that repeat an earlier
	// record of theirs (same key, same STATE_VERSION, same value): Kafka
	// delivery is at least once, so these are allowed.
	Redelivered int
}

// Add sums c and d.
func (c Counts) Add(d Counts) Counts {
	return Counts{Lost: c.Lost + d.Lost, Regressions: c.Regressions + d.Regressions,
		Duplicated: c.Duplicated + d.Duplicated, Redelivered: c.Redelivered + d.Redelivered}
}

// Report is what a check found: the counts and, for each thing counted
// but Redelivered, a line saying what (at most MaxProblems of them).
type Report struct {
	Counts
	Problems []string
	// More counts the problems left out beyond MaxProblems.
	More int
}

// MaxProblems bounds the problems a Report lists.
const MaxProblems = 40

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) >= MaxProblems {
		r.More++
		return
	}
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// OK reports whether nothing was lost, regressed or duplicated.
func (r Report) OK() bool {
	return r.Lost == 0 && r.Regressions == 0 && r.Duplicated == 0 && len(r.Problems) == 0
}

// Assert fails t with every problem of the report, under name.
func (r Report) Assert(t testing.TB, name string) {
	t.Helper()
	if r.OK() {
		return
	}
	for _, p := range r.Problems {
		t.Errorf("%s: %s", name, p)
	}
	if r.More > 0 {
		t.Errorf("%s: … and %d more problems", name, r.More)
	}
	t.Errorf("%s: lost %d, regressions %d, duplicated effects %d", name, r.Lost, r.Regressions, r.Duplicated)
}

var (
	stateVersion = regexp.MustCompile(`"STATE_VERSION":\d+`)
	updatedAt    = regexp.MustCompile(`"UPDATED_AT":"[^"]*"`)
)

// Mask replaces in a JSON document what legitimately differs between two
// runs of the same rows: STATE_VERSION and UPDATED_AT.
func Mask(doc string) string {
	doc = stateVersion.ReplaceAllString(doc, `"STATE_VERSION":"*"`)
	return updatedAt.ReplaceAllString(doc, `"UPDATED_AT":"*"`)
}

// Self checks one run on its own: the state topic converges to the export
// (the last record per FLID, a tombstone deleting, equals the FLID's
// export line byte for byte, and no other FLID is left on it); per FLID
// the state topic's records sit in one partition with STATE_VERSION never
// decreasing, and the notices never go back but by a re-send; no outbox
// event is pending or parked and every result is written back. Records
// repeating an earlier one are counted as Redelivered.
func Self(o Outcome) Report {
	var r Report
	latest := map[string]string{}
	for k, v := range dispatchtest.Latest(o.State) {
		latest[k] = string(v)
	}
	for _, flid := range sortedKeys(o.Export) {
		got, ok := latest[flid]
		switch {
		case !ok:
			r.Lost++
			r.problem("FLID %s: exported, but no record of it is the last on the state topic", flid)
		case got != o.Export[flid]:
			r.Lost++
			r.problem("FLID %s: the last state record differs from the export:\n  topic  %s\n  export %s", flid, got, o.Export[flid])
		}
	}
	for _, flid := range sortedKeys(latest) {
		if _, ok := o.Export[flid]; !ok {
			r.Lost++
			r.problem("FLID %s: on the state topic but not exported (a deletion not delivered): %s", flid, latest[flid])
		}
	}
	r.orderState(o.State)
	r.orderNotices(o.Notice)
	if o.OutboxPending > 0 {
		r.Lost += int(o.OutboxPending)
		r.problem("%d outbox events pending (not delivered)", o.OutboxPending)
	}
	if o.OutboxParked > 0 {
		r.Lost += int(o.OutboxParked)
		r.problem("%d outbox events parked (Kafka refused them)", o.OutboxParked)
	}
	if o.BackfillPending > 0 {
		r.Lost += int(o.BackfillPending)
		r.problem("%d results committed but not written back (backfill intents left)", o.BackfillPending)
	}
	return r
}

// orderState counts the state topic's regressions and repeats: per FLID,
// every record in one partition, its STATE_VERSION never below the highest
// one of the FLID before it (not just the last record's), and one state
// per version: a record at a version already seen with another body is a
// regression (two states published as one version).
func (r *Report) orderState(records []dispatchtest.Record) {
	part := map[string]int32{}
	top := map[string]dispatchtest.Record{}
	body := map[string]string{} // FLID and version → the first value seen
	seen := map[string]bool{}
	for _, rec := range records {
		if p, ok := part[rec.Key]; ok && p != rec.Partition {
			r.Regressions++
			r.problem("FLID %s: state records in partitions %d and %d", rec.Key, p, rec.Partition)
		}
		part[rec.Key] = rec.Partition
		v := rec.StateVersion()
		if v < 0 {
			r.Lost++
			r.problem("state record %d/%d of FLID %s has no STATE_VERSION: %s", rec.Partition, rec.Offset, rec.Key, rec.Value)
			continue
		}
		if prev, ok := top[rec.Key]; ok && v < prev.StateVersion() {
			r.Regressions++
			r.problem("FLID %s: STATE_VERSION %d at offset %d after %d at offset %d", rec.Key, v, rec.Offset, prev.StateVersion(), prev.Offset)
		}
		if prev, ok := top[rec.Key]; !ok || v > prev.StateVersion() {
			top[rec.Key] = rec
		}
		at := fmt.Sprintf("%s\x00%d", rec.Key, v)
		if b, ok := body[at]; !ok {
			body[at] = string(rec.Value)
		} else if b != string(rec.Value) {
			r.Regressions++
			r.problem("FLID %s: two states at STATE_VERSION %d (offset %d):\n  first %s\n  then  %s", rec.Key, v, rec.Offset, b, rec.Value)
		}
		id := at + "\x00" + string(rec.Value)
		if seen[id] {
			r.Redelivered++
		}
		seen[id] = true
	}
}

// orderNotices counts the notice topic's regressions and repeats: per
// FLID, a notice whose version is below one already seen must repeat an
// earlier notice (a re-send after a crash between the Kafka commit and
// the delivered mark), never be an older one delivered late.
func (r *Report) orderNotices(records []dispatchtest.Record) {
	seen := map[string]bool{}
	top := map[string]int64{}
	for _, rec := range records {
		v := rec.StateVersion()
		id := fmt.Sprintf("%s\x00%d\x00%s", rec.Key, v, rec.Value)
		if m, ok := top[rec.Key]; ok && v < m && !seen[id] {
			r.Regressions++
			r.problem("FLID %s: notice version %d at %d/%d after %d, and not a re-send", rec.Key, v, rec.Partition, rec.Offset, m)
		}
		if seen[id] {
			r.Redelivered++
		}
		seen[id] = true
		if m, ok := top[rec.Key]; !ok || v > m {
			top[rec.Key] = v
		}
	}
}

// Compare checks got against the reference ref (both drained runs of the
// same rows) and got on its own (Self): the same mailbox results, the same
// export (masked), ledger and proc_state, and the same notices — per
// masked notice (a message's change of a flight), as many distinct
// versions as the reference's: fewer is lost, more is an effect applied
// twice.
func Compare(ref, got Outcome) Report {
	r := Self(got)

	gotRows := map[int64]MailboxRow{}
	for _, m := range got.Mailbox {
		gotRows[m.ID] = m
	}
	for _, want := range ref.Mailbox {
		m, ok := gotRows[want.ID]
		if !ok || m != want {
			r.Lost++
			r.problem("mailbox row %d: %+v, the clean run has %+v", want.ID, m, want)
		}
		delete(gotRows, want.ID)
	}
	for _, id := range sortedKeys(gotRows) {
		r.Duplicated++
		r.problem("mailbox row %d: not in the clean run: %+v", id, gotRows[id])
	}

	for _, flid := range sortedKeys(ref.Export) {
		g, ok := got.Export[flid]
		if !ok {
			r.Lost++
			r.problem("FLID %s: exported by the clean run only", flid)
			continue
		}
		if Mask(g) != Mask(ref.Export[flid]) {
			r.Lost++
			r.problem("FLID %s: export differs (STATE_VERSION, UPDATED_AT masked):\n  clean   %s\n  faulted %s", flid, ref.Export[flid], g)
		}
	}
	for _, flid := range sortedKeys(got.Export) {
		if _, ok := ref.Export[flid]; !ok {
			r.Duplicated++
			r.problem("FLID %s: exported, but not by the clean run: %s", flid, got.Export[flid])
		}
	}

	r.multiset("ledger line", ref.Ledger, got.Ledger)
	r.multiset("proc_state", ref.ProcState, got.ProcState)

	want, have := noticeVersions(ref.Notice), noticeVersions(got.Notice)
	for _, k := range sortedKeys(want) {
		if n, m := len(want[k]), len(have[k]); m < n {
			r.Lost += n - m
			r.problem("notice %s: under %d versions, the clean run's under %d", k, m, n)
		}
	}
	for _, k := range sortedKeys(have) {
		if n, m := len(want[k]), len(have[k]); m > n {
			r.Duplicated += m - n
			r.problem("notice %s: under %d versions %v, the clean run's under %d (applied more than once)", k, m, sortedKeys(have[k]), n)
		}
	}
	return r
}

// multiset counts the lines of ref missing from got as lost and those of
// got missing from ref as duplicated.
func (r *Report) multiset(what string, ref, got []string) {
	count := map[string]int{}
	for _, l := range ref {
		count[l]++
	}
	for _, l := range got {
		count[l]--
	}
	for _, l := range sortedKeys(count) {
		switch n := count[l]; {
		case n > 0:
			r.Lost += n
			r.problem("%s only in the clean run (%d×): %s", what, n, l)
		case n < 0:
			r.Duplicated += -n
			r.problem("%s not in the clean run (%d×): %s", what, -n, l)
		}
	}
}

// noticeVersions maps each masked notice to the set of its versions.
func noticeVersions(records []dispatchtest.Record) map[string]map[int64]bool {
	out := map[string]map[int64]bool{}
	for _, rec := range records {
		k := rec.Key + " " + Mask(string(rec.Value))
		if out[k] == nil {
			out[k] = map[int64]bool{}
		}
		out[k][rec.StateVersion()] = true
	}
	return out
}

func sortedKeys[K int64 | string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Validate refuses a clean run that is not what the workload fixes
// (ExpectDay): every row of it processed, exactly the expected rows DEAD
// and the others SUCCEEDED or SKIPPED, exactly the expected flights
// exported, the expected ledger days at their versions, and records on
// both topics. Fixed expectations, not the reference's own say-so: a
// defect shared by the clean and the faulted run would otherwise compare
// equal and report nothing lost.
func Validate(ref Outcome, want Expected) error {
	var problems []string
	if len(ref.Mailbox) != want.Rows {
		problems = append(problems, fmt.Sprintf("%d mailbox rows, want %d", len(ref.Mailbox), want.Rows))
	}
	dead := map[int64]bool{}
	for _, id := range want.Dead {
		dead[id] = true
	}
	for _, m := range ref.Mailbox {
		switch {
		case !m.Processed:
			problems = append(problems, fmt.Sprintf("mailbox row %d not processed", m.ID))
		case dead[m.ID] && m.Result != "DEAD":
			problems = append(problems, fmt.Sprintf("mailbox row %d is %s %q, want DEAD (a malformed row)", m.ID, m.Result, m.Note))
		case !dead[m.ID] && m.Result != "SUCCEEDED" && m.Result != "SKIPPED":
			problems = append(problems, fmt.Sprintf("mailbox row %d is %s %q, want SUCCEEDED or SKIPPED", m.ID, m.Result, m.Note))
		}
	}
	if got := sortedKeys(ref.Export); !slices.Equal(got, want.Flights) {
		problems = append(problems, fmt.Sprintf("exported flights %v, want %v", got, want.Flights))
	}
	ledger := map[string]int64{}
	for _, line := range ref.Ledger {
		var d struct {
			Day     string `json:"day"`
			Version int64  `json:"version"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			problems = append(problems, fmt.Sprintf("ledger line %q: %v", line, err))
			continue
		}
		ledger[d.Day] = d.Version
	}
	if !maps.Equal(ledger, want.Ledger) {
		problems = append(problems, fmt.Sprintf("ledger days and versions %v, want %v", ledger, want.Ledger))
	}
	if len(ref.State) == 0 || len(ref.Notice) == 0 {
		problems = append(problems, fmt.Sprintf("%d state and %d notice records", len(ref.State), len(ref.Notice)))
	}
	if len(problems) > 0 {
		if len(problems) > MaxProblems {
			problems = append(problems[:MaxProblems], fmt.Sprintf("… and %d more", len(problems)-MaxProblems))
		}
		return fmt.Errorf("the clean run is not what the workload fixes:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}
