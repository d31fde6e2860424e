package snapshot

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/flight"
)

func TestCheckCoverage(t *testing.T) {
	ok := []Record{{1, "2026-09-09"}, {2, "2026-09-09"}}
	if err := CheckCoverage("2026-09-09", ok); err != nil {
		t.Fatalf("one-day snapshot refused: %v", err)
	}
	if err := CheckCoverage("2026-09-09", nil); err != nil {
		t.Fatalf("empty snapshot refused: %v", err)
	}
	err := CheckCoverage("2026-09-09", append(ok, Record{3, "2026-09-10"}))
	var rej *Rejection
	if !errors.As(err, &rej) || rej.Reason != ReasonMixedDays || !slices.Equal(rej.FLIDs, []flight.FLID{3}) {
		t.Fatalf("mixed days: %v", err)
	}
}

// The owner table of processing rules R5.3.
func TestCheckOwners(t *testing.T) {
	stored := map[flight.FLID]string{10: "", 11: "2026-09-09", 12: "2026-09-10"}
	cases := []struct {
		name    string
		records []Record
		reject  []flight.FLID
	}{
		{"absent: created", []Record{{99, "2026-09-09"}}, nil},
		{"NULL: set for the first time", []Record{{10, "2026-09-09"}}, nil},
		{"same day: updated", []Record{{11, "2026-09-09"}}, nil},
		{"other day: whole message refused", []Record{{11, "2026-09-09"}, {12, "2026-09-09"}}, []flight.FLID{12}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckOwners(c.records, stored)
			if c.reject == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var rej *Rejection
			if !errors.As(err, &rej) || rej.Reason != ReasonDayMismatch || !slices.Equal(rej.FLIDs, c.reject) {
				t.Fatalf("got %v, want rejection of %v", err, c.reject)
			}
		})
	}
}

// A day mismatch carries every refused FLID with both days, beyond the five
// its text names, for `flightfeed dead`.
func TestCheckOwnersListsEveryConflict(t *testing.T) {
	stored := map[flight.FLID]string{}
	var records []Record
	var want []Conflict
	for f := flight.FLID(1); f <= 7; f++ {
		stored[f] = "2026-09-09"
		records = append(records, Record{f, "2026-09-10"})
		want = append(want, Conflict{FLID: f, StoredDay: "2026-09-09", MessageDay: "2026-09-10"})
	}
	records = append(records, Record{8, "2026-09-10"})
	var rej *Rejection
	if err := CheckOwners(records, stored); !errors.As(err, &rej) || !slices.Equal(rej.Conflicts, want) {
		t.Fatalf("got %v (conflicts %+v), want %+v", err, rej, want)
	}
}

func TestDiffDeleteAndVictims(t *testing.T) {
	// processing rules R5.1: generation {CA100, CZ300}, snapshot {CA100, MU201}.
	const ca100, mu201, cz300 = 100, 201, 300
	cands := DiffDelete([]flight.FLID{ca100, cz300}, []flight.FLID{ca100, mu201})
	if !slices.Equal(cands, []flight.FLID{cz300}) {
		t.Fatalf("O−N = %v, want [300]", cands)
	}
	del, err := Victims("2026-09-09", cands, map[flight.FLID]string{cz300: "2026-09-09"})
	if err != nil || !slices.Equal(del, []flight.FLID{cz300}) {
		t.Fatalf("victims = %v, %v", del, err)
	}
	// Already gone: skipped, not an error.
	if del, err := Victims("2026-09-09", cands, map[flight.FLID]string{}); err != nil || len(del) != 0 {
		t.Fatalf("missing victim: %v, %v", del, err)
	}
	// Another day: an assertion, not a filter.
	_, err = Victims("2026-09-09", cands, map[flight.FLID]string{cz300: "2026-09-10"})
	var rej *Rejection
	if !errors.As(err, &rej) || rej.Reason != ReasonLedgerInconsistent {
		t.Fatalf("victim of another day: %v", err)
	}
	// A victim whose stored day is NULL (a flight no full-day snapshot
	// ever claimed) is on no day's roster: refused, never deleted.
	del, err = Victims("2026-09-09", cands, map[flight.FLID]string{cz300: ""})
	if !errors.As(err, &rej) || rej.Reason != ReasonLedgerInconsistent || !slices.Equal(rej.FLIDs, []flight.FLID{cz300}) || del != nil {
		t.Fatalf("victim with a NULL day: deleted %v, err %v", del, err)
	}
	if got := DiffDelete([]flight.FLID{3, 1, 2, 1}, nil); !slices.Equal(got, []flight.FLID{1, 2, 3}) {
		t.Fatalf("empty snapshot deletes the whole roster once each: %v", got)
	}
}

func TestMissingKeepsTheFirstListsOrder(t *testing.T) {
	for _, c := range []struct {
		a, b, want []flight.FLID
	}{
		{a: []flight.FLID{5, 3, 9, 1}, b: []flight.FLID{9}, want: []flight.FLID{5, 3, 1}},
		{a: []flight.FLID{5, 3}, b: []flight.FLID{3, 5, 7}, want: nil},
		{a: nil, b: []flight.FLID{1}, want: nil},
		{a: []flight.FLID{2, 1}, b: nil, want: []flight.FLID{2, 1}},
	} {
		if got := Missing(c.a, c.b); !slices.Equal(got, c.want) {
			t.Errorf("Missing(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestDigestIgnoresOrder(t *testing.T) {
	a := Digest([]flight.FLID{3, 1, 2})
	if a != Digest([]flight.FLID{1, 2, 3}) || a == Digest([]flight.FLID{1, 2}) || len(a) != 16 {
		t.Fatalf("digest %q", a)
	}
}

// A skip-conflicts replay's refused records are no diff-delete candidates,
// and those on the day's roster stay on it; without any, nothing changes.
func TestKeepRefused(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		candidates, roster     []flight.FLID
		keep                   []flight.FLID
		wantLeft, wantRostered []flight.FLID
	}{
		{"none kept", []flight.FLID{3, 5}, []flight.FLID{1, 3, 5}, nil, []flight.FLID{3, 5}, nil},
		{"a kept flight on the roster", []flight.FLID{3, 5}, []flight.FLID{1, 3, 5}, []flight.FLID{5}, []flight.FLID{3}, []flight.FLID{5}},
		{"a kept flight new to the day", []flight.FLID{3}, []flight.FLID{1, 3}, []flight.FLID{9}, []flight.FLID{3}, nil},
		{"every candidate kept", []flight.FLID{3, 5}, []flight.FLID{5, 3}, []flight.FLID{3, 5}, nil, []flight.FLID{5, 3}},
	} {
		left, rostered := KeepRefused(tc.candidates, tc.roster, tc.keep)
		if !slices.Equal(left, tc.wantLeft) || !slices.Equal(rostered, tc.wantRostered) {
			t.Errorf("%s: left %v rostered %v, want %v and %v", tc.name, left, rostered, tc.wantLeft, tc.wantRostered)
		}
	}
}

// Only a skip-conflicts snapshot goes on past a day mismatch, without the
// flights it names; every other refusal stops it as it is.
func TestSkipDayMismatches(t *testing.T) {
	mismatch := &Rejection{Reason: ReasonDayMismatch, FLIDs: []flight.FLID{4, 7}}
	other := errors.New("read stored days: connection reset")
	coverage := &Rejection{Reason: "MIXED_OPERATION_DAYS"}
	for _, tc := range []struct {
		name    string
		err     error
		skip    bool
		want    []flight.FLID
		wantErr error
	}{
		{"day mismatch, skip-conflicts", fmt.Errorf("owners: %w", mismatch), true, []flight.FLID{4, 7}, nil},
		{"day mismatch, live", mismatch, false, nil, mismatch},
		{"another rejection, skip-conflicts", coverage, true, nil, coverage},
		{"an infrastructure error, skip-conflicts", other, true, nil, other},
	} {
		set, skipped, err := SkipDayMismatches(tc.err, tc.skip)
		if !errors.Is(err, tc.wantErr) || !slices.Equal(skipped, tc.want) || len(set) != len(tc.want) {
			t.Errorf("%s: skip %v %v, error %v; want %v, error %v", tc.name, set, skipped, err, tc.want, tc.wantErr)
		}
		for _, f := range tc.want {
			if !set[f] {
				t.Errorf("%s: %d not in the skip set %v", tc.name, f, set)
			}
		}
	}
}

// The texts a refusal carries stay readable at any size: a day mismatch
// names its first five flights, a victim list its first ten then the
// count left, a RESP over many days its first day and the number of
// distinct days.
func TestRefusalTextsAreBounded(t *testing.T) {
	stored := map[flight.FLID]string{}
	var records []Record
	for f := flight.FLID(1); f <= 7; f++ {
		stored[f] = "2026-09-09"
		records = append(records, Record{f, "2026-09-10"})
	}
	var rej *Rejection
	if err := CheckOwners(records, stored); !errors.As(err, &rej) {
		t.Fatalf("got %v", err)
	}
	if n := strings.Count(rej.Detail, "belongs to"); n != 5 || !strings.HasPrefix(rej.Detail, "7 FLID(s) across operation days: 1 belongs to 2026-09-09, record says 2026-09-10; 2 belongs") {
		t.Errorf("detail names %d flights, want 5: %s", n, rej.Detail)
	}

	var cands []flight.FLID
	bad := map[flight.FLID]string{}
	for f := flight.FLID(1); f <= 12; f++ {
		cands = append(cands, f)
		bad[f] = "2026-09-10"
	}
	if _, err := Victims("2026-09-09", cands, bad); !errors.As(err, &rej) {
		t.Fatalf("got %v", err)
	}
	if want := "roster of 2026-09-09 lists flight(s) of another day: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more"; rej.Detail != want {
		t.Errorf("detail %q, want %q", rej.Detail, want)
	}
	if _, err := Victims("2026-09-09", cands[:10], bad); !errors.As(err, &rej) || strings.Contains(rej.Detail, "more") {
		t.Errorf("ten flights: %v", err)
	}

	days := []string{"2026-09-01", "2026-09-02", "2026-09-02", "2026-09-03", "2026-09-04", "2026-09-05"}
	if _, err := Attribute(Inbound{Styp: "RESP", Sender: "AODB", Days: days}, Requests{}); !errors.As(err, &rej) ||
		!strings.HasSuffix(rej.Detail, "([2026-09-01 2026-09-02 2026-09-03 2026-09-04 2026-09-05])") {
		t.Errorf("five distinct days are named, each once: %v", err)
	}
	if _, err := Attribute(Inbound{Styp: "RESP", Sender: "AODB", Days: append(days, "2026-09-06")}, Requests{}); !errors.As(err, &rej) ||
		!strings.HasSuffix(rej.Detail, "(2026-09-01 … 6 days)") {
		t.Errorf("six distinct days are counted: %v", err)
	}
}
