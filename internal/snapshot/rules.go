package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Reason codes of the rejections decided here.
const (
	// ReasonDayMismatch: a record's FLID already belongs to another
	// operation day (processing rules R5.3, alert SAME_FLID_ACROSS_OPERATION_DAYS).
	ReasonDayMismatch = "SAME_FLID_ACROSS_OPERATION_DAYS"
	// ReasonMixedDays: a full-day snapshot holds records of another day.
	ReasonMixedDays = "MIXED_OPERATION_DAYS"
	// ReasonLedgerInconsistent: a diff-delete victim's day is not the
	// snapshot's day, so the roster and the main table disagree.
	ReasonLedgerInconsistent = "LEDGER_INCONSISTENT"
)

// Rejection is a decided refusal of a whole message: nothing is written but
// its terminal state (DEAD, class PROTOCOL) and the trace log.
type Rejection struct {
	Reason string
	Detail string
	FLIDs  []flight.FLID
	// Conflicts are, for a day mismatch, every refused FLID with its stored
	// day and the day the message gave it, in record order.
	Conflicts []Conflict
}

// Conflict is one FLID a snapshot attributed to another day than the one
// its stored row already has (processing rules R5.3, fourth row).
type Conflict struct {
	FLID       flight.FLID
	StoredDay  string
	MessageDay string
}

func (r *Rejection) Error() string {
	return r.Reason + ": " + r.Detail
}

// Record is what the rules need of one snapshot record.
type Record struct {
	FLID flight.FLID
	// Day is the record's operation day from its SODT ("YYYY-MM-DD").
	Day string
}

// CheckCoverage enforces that every record of a full-day snapshot of day
// belongs to that day (processing rules R5.2, validation five).
func CheckCoverage(day string, records []Record) error {
	var off []flight.FLID
	for _, r := range records {
		if r.Day != day {
			off = append(off, r.FLID)
		}
	}
	if len(off) == 0 {
		return nil
	}
	return &Rejection{Reason: ReasonMixedDays, FLIDs: off,
		Detail: fmt.Sprintf("full-day snapshot of %s holds %d record(s) of other days: %s", day, len(off), list(off))}
}

// CheckOwners enforces the identity rule for every snapshot record, full-day
// or window (processing rules R10.5): a FLID whose stored day is set and differs from the
// record's day rejects the whole message. stored maps FLID → stored day
// ("" while NULL); absent FLIDs are new flights.
func CheckOwners(records []Record, stored map[flight.FLID]string) error {
	var off []flight.FLID
	var conflicts []Conflict
	var detail []string
	for _, r := range records {
		have, ok := stored[r.FLID]
		if ok && have != "" && have != r.Day {
			off = append(off, r.FLID)
			conflicts = append(conflicts, Conflict{FLID: r.FLID, StoredDay: have, MessageDay: r.Day})
			if len(detail) < 5 {
				detail = append(detail, fmt.Sprintf("%s belongs to %s, record says %s", r.FLID, have, r.Day))
			}
		}
	}
	if len(off) == 0 {
		return nil
	}
	return &Rejection{Reason: ReasonDayMismatch, FLIDs: off, Conflicts: conflicts,
		Detail: fmt.Sprintf("%d FLID(s) across operation days: %s", len(off), strings.Join(detail, "; "))}
}

// DiffDelete returns old − new, sorted: the flights the previous snapshot of
// the day had and this one lacks.
func DiffDelete(old, current []flight.FLID) []flight.FLID {
	out := Missing(old, current)
	slices.Sort(out)
	return slices.Compact(out)
}

// Missing is a's flights that b does not hold, in a's order (a roster's
// joiners and leavers against the roster before it).
func Missing(a, b []flight.FLID) []flight.FLID {
	in := make(map[flight.FLID]struct{}, len(b))
	for _, f := range b {
		in[f] = struct{}{}
	}
	var out []flight.FLID
	for _, f := range a {
		if _, ok := in[f]; !ok {
			out = append(out, f)
		}
	}
	return out
}

// Without is flids less those in drop, in their order.
func Without(flids []flight.FLID, drop map[flight.FLID]bool) []flight.FLID {
	var out []flight.FLID
	for _, f := range flids {
		if !drop[f] {
			out = append(out, f)
		}
	}
	return out
}

// KeepRefused applies the records a skip-conflicts replay left out (keep:
// refused by the decoder, their flights untouched) to a snapshot of the
// day: they are no diff-delete candidates, and those the day's roster
// holds stay in it (rostered, in roster order).
func KeepRefused(candidates, roster, keep []flight.FLID) (left, rostered []flight.FLID) {
	if len(keep) == 0 {
		return candidates, nil
	}
	kept := make(map[flight.FLID]bool, len(keep))
	for _, f := range keep {
		kept[f] = true
	}
	for _, f := range roster {
		if kept[f] {
			rostered = append(rostered, f)
		}
	}
	return Without(candidates, kept), rostered
}

// SkipDayMismatches is what a snapshot does with CheckOwners' error err:
// with skipConflicts and a day-mismatch rejection, it goes on without the
// flights whose stored day differs (skip, and their FLIDs as the rejection
// lists them); any other error stops it, returned as is.
func SkipDayMismatches(err error, skipConflicts bool) (skip map[flight.FLID]bool, skipped []flight.FLID, _ error) {
	var rej *Rejection
	if !skipConflicts || !errors.As(err, &rej) || rej.Reason != ReasonDayMismatch {
		return nil, nil, err
	}
	skip = make(map[flight.FLID]bool, len(rej.FLIDs))
	for _, f := range rej.FLIDs {
		skip[f] = true
	}
	return skip, rej.FLIDs, nil
}

// Victims applies processing rules R5.5 to the diff-delete set: a victim that no
// longer exists is skipped (deleted already, or an idempotent replay); one
// whose day is not day is an assertion failure that rejects the message.
// stored maps each existing victim to its day.
func Victims(day string, candidates []flight.FLID, stored map[flight.FLID]string) ([]flight.FLID, error) {
	var del, bad []flight.FLID
	for _, f := range candidates {
		have, ok := stored[f]
		switch {
		case !ok:
		case have != day:
			bad = append(bad, f)
		default:
			del = append(del, f)
		}
	}
	if len(bad) > 0 {
		return nil, &Rejection{Reason: ReasonLedgerInconsistent, FLIDs: bad,
			Detail: fmt.Sprintf("roster of %s lists flight(s) of another day: %s", day, list(bad))}
	}
	return del, nil
}

// Digest fingerprints a roster (order-insensitive) for the trace log.
func Digest(flids []flight.FLID) string {
	sorted := slices.Clone(flids)
	slices.Sort(sorted)
	h := sha256.New()
	for _, f := range sorted {
		fmt.Fprintf(h, "%d\n", uint64(f))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func list(flids []flight.FLID) string {
	var b strings.Builder
	for i, f := range flids {
		if i == 10 {
			fmt.Fprintf(&b, " and %d more", len(flids)-10)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.String())
	}
	return b.String()
}
