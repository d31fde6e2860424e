package sis

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/sis/sistest"
)

// forceParallel makes every SCHD body eligible for the chunked path.
func forceParallel(tb testing.TB) {
	tb.Helper()
	old := parallelMinBytes
	parallelMinBytes = 0
	tb.Cleanup(func() { parallelMinBytes = old })
}

// countParallelCommits counts how often the chunked path committed.
func countParallelCommits(tb testing.TB) *int {
	tb.Helper()
	n := new(int)
	old := onParallelCommit
	onParallelCommit = func() { *n++ }
	tb.Cleanup(func() { onParallelCommit = old })
	return n
}

// assertSameOutcome decodes raw sequentially and in parallel and requires
// the same message and the same error, byte for byte.
func assertSameOutcome(t *testing.T, raw []byte, workers int) (*Message, error) {
	t.Helper()
	return assertSameOutcomeWith(t, raw, Options{MaxDepth: 16}, workers)
}

// assertSameOutcomeWith is assertSameOutcome with other Options.
func assertSameOutcomeWith(t *testing.T, raw []byte, opts Options, workers int) (*Message, error) {
	t.Helper()
	opts.Workers = 1
	seqMsg, seqErr := Decode(raw, opts)
	opts.Workers = workers
	parMsg, parErr := Decode(raw, opts)
	if fmt.Sprint(seqErr) != fmt.Sprint(parErr) {
		t.Fatalf("errors differ:\n sequential: %v\n parallel:   %v", seqErr, parErr)
	}
	if diff := cmp.Diff(seqMsg, parMsg); diff != "" {
		t.Fatalf("messages differ (-sequential +parallel):\n%s", diff)
	}
	return parMsg, parErr
}

func TestParallelMatchesSequential(t *testing.T) {
	forceParallel(t)
	commits := countParallelCommits(t)
	for _, workers := range []int{2, 3, 4} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			before := *commits
			msg, err := assertSameOutcome(t, sistest.DNLD(37), workers)
			if err != nil || len(msg.Records) != 37 || msg.Records[36].Index != 37 {
				t.Fatalf("err %v, %d records", err, len(msg.Records))
			}
			if *commits != before+1 {
				t.Fatal("the parallel path was not taken")
			}
		})
	}
}

// Each hostile variation of a 12-record SCHD body is decoded the same way
// sequentially and in parallel, and each case names both the path taken
// (the chunked path committed, or fell back to the sequential decoder) and
// the outcome (12 records, or the error's reason and path): a chunked path
// that stopped committing, or a fallback that kept the sequential outcome
// but a different one from the one the case names, fails here.
func TestParallelFallbacksKeepSequentialOutcome(t *testing.T) {
	forceParallel(t)
	good := string(sistest.DNLD(12))
	nth := func(s, sub string, n int) int { // offset of the n-th occurrence
		at := -1
		for range n {
			at += 1 + strings.Index(s[at+1:], sub)
		}
		return at
	}
	insertAt := func(s string, at int, what string) string { return s[:at] + what + s[at:] }
	type want struct {
		commits bool   // the chunked path committed
		reason  Reason // "" when the body decodes, to 12 records
		path    string
	}
	tests := map[string]struct {
		raw string
		want
	}{
		// Well-formed bodies the chunk scanner cannot split safely: the
		// sequential decoder reads them, to the 12 records.
		"comment in body":        {strings.Replace(good, "<FLTR>", "<!-- <FLTR> --><FLTR>", 1), want{}},
		"CDATA in a value":       {strings.Replace(good, "<REMC>ON TIME", "<REMC><![CDATA[<FLTR>]]>ON TIME", 1), want{}},
		"RECS after records":     {strings.Replace(strings.Replace(good, "<RECS>12</RECS>", "", 1), "</SCHD>", "<RECS>12</RECS></SCHD>", 1), want{}},
		"nested FLTR":            {strings.Replace(good, "<FLNO>", "<FLTR/><FLNO>", 1), want{}},
		"unknown element":        {insertAt(good, nth(good, "<FLTR>", 7), "<NOTE>x</NOTE>"), want{}},
		"processing instruction": {strings.Replace(good, "</SCHD>", "<?pi x?></SCHD>", 1), want{}},
		// A record-only body: the chunked path commits.
		"CRLF and entities": {strings.ReplaceAll(good, "\n", "\r\n"), want{commits: true}},
		// Errors a chunk finds, or the merge: the sequential decoder
		// reports them, at the place it finds them.
		"duplicate across":      {strings.Replace(good, "<FLID>100011</FLID>", "<FLID>100000</FLID>", 1), want{false, ReasonDuplicateFLID, "MSG/SCHD/FLTR[12]/FLID"}},
		"RECS too small":        {strings.Replace(good, "<RECS>12</RECS>", "<RECS>11</RECS>", 1), want{false, ReasonRecsMismatch, "MSG/SCHD/FLTR[12]"}},
		"error in last chunk":   {strings.Replace(good, "<FLID>100011</FLID>", "<FLID>x</FLID>", 1), want{false, ReasonBadFLID, "MSG/SCHD/FLTR[12]/FLID"}},
		"syntax in last chunk":  {strings.Replace(good, "<FLID>100011</FLID>", "<FLID>100011</FLIX>", 1), want{false, ReasonMalformedXML, "MSG/SCHD/FLTR/FLID"}},
		"SCHD never closed":     {strings.Replace(good, "</SCHD>", "", 1), want{false, ReasonMalformedXML, "MSG/SCHD"}},
		"SCHDX closing":         {strings.Replace(good, "</SCHD>", "</SCHDX></SCHD>", 1), want{false, ReasonMalformedXML, "MSG/SCHD"}},
		"too deep in a chunk":   {strings.Replace(good, "<SRQT>2</SRQT>", "<SRQT><a><b><c><d><e><f><g><h><i><j><k><l><m>2</m></l></k></j></i></h></g></f></e></d></c></b></a></SRQT>", 1), want{false, ReasonTooDeep, "MSG/SCHD/FLTR/SRVT/SRQT/a/b/c/d/e/f/g/h/i/j/k"}},
		"text between records":  {insertAt(good, nth(good, "<FLTR>", 9), "oops"), want{false, ReasonBadStructure, "MSG/SCHD"}},
		"RECS in MSG and SCHD":  {strings.Replace(good, "<SCHD>", "<RECS>12</RECS><SCHD>", 1), want{false, ReasonDuplicateField, "MSG/SCHD/RECS"}},
		"self-closing FLTR":     {strings.Replace(good, "</SCHD>", "<FLTR/></SCHD>", 1), want{false, ReasonRecsMismatch, "MSG/SCHD/FLTR[13]"}},
		"bad RECS":              {strings.Replace(good, "<RECS>12</RECS>", "<RECS>1x</RECS>", 1), want{false, ReasonBadRecs, "MSG/SCHD/RECS"}},
		"RECS 0":                {strings.Replace(good, "<RECS>12</RECS>", "<RECS>0</RECS>", 1), want{false, ReasonRecsMismatch, "MSG/SCHD/FLTR[1]"}},
		"text before records":   {strings.Replace(good, "<RECS>12</RECS>", "<RECS>12</RECS>oops", 1), want{false, ReasonBadStructure, "MSG/SCHD"}},
		"broken tag in a chunk": {strings.Replace(good, "<FLID>100005</FLID>", "<FLID>100005</FLID", 1), want{false, ReasonMalformedXML, "MSG/SCHD/FLTR/FLID"}},
		// The third record's elements inside <NOTE> beside an empty FLTR:
		// no record for the sequential decoder, one FLTR start tag for the
		// chunk scanner.
		"FLTR in an unknown element": {func() string {
			at := nth(good, "<FLTR>", 3)
			end := at + strings.Index(good[at:], "</FLTR>")
			return good[:at] + "<NOTE><FLTR/>" + good[at+len("<FLTR>"):end] + "</NOTE>" + good[end+len("</FLTR>"):]
		}(), want{false, ReasonRecsMismatch, "MSG/SCHD/RECS"}},
		"duplicate after SCHD": {strings.Replace(strings.Replace(good, "<RECS>12</RECS>", "<RECS>13</RECS>", 1), "</SCHD>", "</SCHD><FLTR><FLID>100003</FLID><SODT>09SEP260000</SODT></FLTR>", 1),
			want{true, ReasonDuplicateFLID, "MSG/FLTR[13]/FLID"}},
		// An increment may hold a FLID twice.
		"ADFT":                           {strings.Replace(good, "<STYP>DNLD</STYP>", "<STYP>ADFT</STYP>", 1), want{commits: true}},
		"ADFT, FLID twice":               {strings.Replace(strings.Replace(good, "<STYP>DNLD</STYP>", "<STYP>ADFT</STYP>", 1), "<FLID>100011</FLID>", "<FLID>100000</FLID>", 1), want{commits: true}},
		"unterminated tag at the end":    {strings.Replace(good, "</SCHD>", "<FLTR</SCHD>", 1), want{false, ReasonMalformedXML, "MSG/SCHD"}},
		"SCHD end tag with an attribute": {strings.Replace(good, "</SCHD>", "</SCHD x>", 1), want{false, ReasonMalformedXML, "MSG/SCHD"}},
		// The SCHD body itself is record-only and well-formed: the chunked
		// path commits, and the remainder scanner finds what follows.
		"RECS too large":     {strings.Replace(good, "<RECS>12</RECS>", "<RECS>13</RECS>", 1), want{true, ReasonRecsMismatch, "MSG/SCHD/RECS"}},
		"duplicate with MSG": {strings.Replace(good, "</SCHD>", "</SCHD><FLTR><FLID>100003</FLID><SODT>09SEP260000</SODT></FLTR>", 1), want{true, ReasonRecsMismatch, "MSG/FLTR[13]"}},
		"syntax after SCHD":  {strings.Replace(good, "</SCHD>", "</SCHD>\n\n<BROKEN", 1), want{true, ReasonMalformedXML, "MSG"}},
		"text after SCHD":    {strings.Replace(good, "</MSG>", "junk</MSG>", 1), want{true, ReasonBadStructure, "MSG"}},
	}
	commits := countParallelCommits(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := *commits
			msg, err := assertSameOutcome(t, []byte(tc.raw), 2)
			if got := *commits > before; got != tc.commits {
				t.Errorf("parallel commit = %v, want %v", got, tc.commits)
			}
			if tc.reason == "" {
				if err != nil || msg == nil || len(msg.Records) != 12 {
					t.Fatalf("want 12 records, got err %v", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("want %s at %s, got %v", tc.reason, tc.path, err)
			}
			if se.Reason != tc.reason || se.Path != tc.path {
				t.Fatalf("got %s at %s (%v), want %s at %s", se.Reason, se.Path, err, tc.reason, tc.path)
			}
		})
	}
}

// Records directly under MSG around <SCHD> are numbered in input order
// whichever path reads the body: a record before <SCHD> leaves it to the
// sequential path (the chunks would number theirs from 1 again), one after
// it is read after the chunks.
func TestParallelNumbersRecordsOutsideSCHD(t *testing.T) {
	forceParallel(t)
	commits := countParallelCommits(t)
	good := string(sistest.DNLD(12))
	outside := "<FLTR><FLID>999</FLID><SODT>09SEP260000</SODT></FLTR>"
	tests := map[string]struct {
		raw     string
		commits bool
	}{
		"a record before SCHD": {strings.Replace(strings.Replace(good, "<RECS>12</RECS>", "", 1), "<SCHD>", "<RECS>13</RECS>"+outside+"<SCHD>", 1), false},
		"a record after SCHD":  {strings.Replace(strings.Replace(good, "<RECS>12</RECS>", "<RECS>13</RECS>", 1), "</SCHD>", "</SCHD>"+outside, 1), true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := *commits
			msg, err := assertSameOutcome(t, []byte(tc.raw), 2)
			if err != nil || len(msg.Records) != 13 {
				t.Fatalf("want 13 records, got %v", err)
			}
			for i, r := range msg.Records {
				if r.Index != i+1 {
					t.Fatalf("record %d (FLID %s) has Index %d", i+1, r.FLID, r.Index)
				}
			}
			if got := *commits > before; got != tc.commits {
				t.Errorf("parallel commit = %v, want %v", got, tc.commits)
			}
		})
	}
}

// TestParallelRecordLimitMatchesSequential: the chunked path commits a
// body of exactly Options.MaxRecords records and leaves one more to the
// sequential path, which refuses it.
func TestParallelRecordLimitMatchesSequential(t *testing.T) {
	forceParallel(t)
	commits := countParallelCommits(t)
	adft := strings.Replace(strings.Replace(string(sistest.DNLD(12)), "<STYP>DNLD</STYP>", "<STYP>ADFT</STYP>", 1), "<RECS>12</RECS>", "", 1)
	before := *commits
	if msg, err := assertSameOutcomeWith(t, []byte(adft), Options{MaxDepth: 16, MaxRecords: 12}, 2); err != nil || len(msg.Records) != 12 || *commits != before+1 {
		t.Fatalf("MaxRecords 12: err %v, commits %d", err, *commits-before)
	}
	before = *commits
	_, err := assertSameOutcomeWith(t, []byte(adft), Options{MaxDepth: 16, MaxRecords: 11}, 2)
	if r, _ := ReasonOf(err); r != ReasonTooManyRecords || *commits != before {
		t.Fatalf("MaxRecords 11: err %v, commits %d", err, *commits-before)
	}
}

// TestParallelPathIsTakenWhereItMay: with one worker the body is read
// sequentially; a message of parallelMinBytes bytes or more is cut into
// chunks, a smaller one is not.
func TestParallelPathIsTakenWhereItMay(t *testing.T) {
	commits := countParallelCommits(t)
	raw := sistest.DNLD(12)
	old := parallelMinBytes
	t.Cleanup(func() { parallelMinBytes = old })
	for _, tt := range []struct {
		minBytes, workers int
		commits           bool
	}{
		{len(raw), 2, true},
		{len(raw) + 1, 2, false},
		{0, 1, false},
	} {
		parallelMinBytes = tt.minBytes
		before := *commits
		if _, err := Decode(raw, Options{Workers: tt.workers}); err != nil {
			t.Fatal(err)
		}
		if got := *commits > before; got != tt.commits {
			t.Errorf("parallelMinBytes %d of %d bytes, %d workers: commit = %v, want %v", tt.minBytes, len(raw), tt.workers, got, tt.commits)
		}
	}
}

func TestSplitChunks(t *testing.T) {
	starts := []int{0, 10, 20, 30, 40, 50}
	chunks := splitChunks(starts, 100, 160, 2)
	want := []chunk{{lo: 100, hi: 130, firstIndex: 1, count: 3}, {lo: 130, hi: 160, firstIndex: 4, count: 3}}
	if diff := cmp.Diff(want, chunks, cmp.AllowUnexported(chunk{})); diff != "" {
		t.Fatal(diff)
	}
	if got := tagStarts(`<FLTR><FLTRX/><FLTR a="1"/><FLTR/>`, "FLTR"); !cmp.Equal(got, []int{0, 14, 27}) {
		t.Fatalf("tagStarts = %v", got)
	}
	for s, want := range map[string][]int{
		"<FLTR":          nil, // a name cut off by the end of the body
		"<FLTRX><FLTR>":  {7},
		"<FLTR\n/><FLTR": {0},
	} {
		if got := tagStarts(s, "FLTR"); !cmp.Equal(got, want) {
			t.Errorf("tagStarts(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]int{
		"</SCHDX></SCHD >": 8,
		"</SCHD></SCHD>":   0,
		"<SCHD>":           -1,
		"x</SCHD":          -1,
		"</SCHD\t>":        0,
	} {
		if got := closingTagIndex(s, "SCHD"); got != want {
			t.Errorf("closingTagIndex(%q) = %d, want %d", s, got, want)
		}
	}
}

// A panic in a chunk worker is raised again in the goroutine that called
// Decode, as a *WorkerPanic with the worker's value and stack, so that the
// caller can recover it: left in the worker it would end the process.
func TestChunkWorkerPanicReachesTheCaller(t *testing.T) {
	forceParallel(t)
	old := onChunk
	onChunk = func(c chunk) {
		if c.firstIndex > 1 {
			panic("boom in a chunk")
		}
	}
	t.Cleanup(func() { onChunk = old })
	var got any
	func() {
		defer func() { got = recover() }()
		_, _ = Decode(sistest.DNLD(37), Options{MaxDepth: 16, Workers: 3})
	}()
	wp, ok := got.(*WorkerPanic)
	if !ok {
		t.Fatalf("recovered %#v, want a *WorkerPanic", got)
	}
	if wp.String() != "boom in a chunk" || !strings.Contains(string(wp.Stack), "sis.TestChunkWorkerPanicReachesTheCaller") {
		t.Fatalf("worker panic %q, stack:\n%s", wp.String(), wp.Stack)
	}
}
