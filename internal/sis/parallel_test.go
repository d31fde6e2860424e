package sis

import (
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
	tests := map[string]string{
		"comment in body":        strings.Replace(good, "<FLTR>", "<!-- <FLTR> --><FLTR>", 1),
		"CDATA in a value":       strings.Replace(good, "<REMC>ON TIME", "<REMC><![CDATA[<FLTR>]]>ON TIME", 1),
		"RECS after records":     strings.Replace(strings.Replace(good, "<RECS>12</RECS>", "", 1), "</SCHD>", "<RECS>12</RECS></SCHD>", 1),
		"nested FLTR":            strings.Replace(good, "<FLNO>", "<FLTR/><FLNO>", 1),
		"unknown element":        insertAt(good, nth(good, "<FLTR>", 7), "<NOTE>x</NOTE>"),
		"duplicate across":       strings.Replace(good, "<FLID>100011</FLID>", "<FLID>100000</FLID>", 1),
		"duplicate with MSG":     strings.Replace(good, "</SCHD>", "</SCHD><FLTR><FLID>100003</FLID><SODT>09SEP260000</SODT></FLTR>", 1),
		"RECS too small":         strings.Replace(good, "<RECS>12</RECS>", "<RECS>11</RECS>", 1),
		"RECS too large":         strings.Replace(good, "<RECS>12</RECS>", "<RECS>13</RECS>", 1),
		"error in last chunk":    strings.Replace(good, "<FLID>100011</FLID>", "<FLID>x</FLID>", 1),
		"syntax in last chunk":   strings.Replace(good, "<FLID>100011</FLID>", "<FLID>100011</FLIX>", 1),
		"syntax after SCHD":      strings.Replace(good, "</SCHD>", "</SCHD>\n\n<BROKEN", 1),
		"text after SCHD":        strings.Replace(good, "</MSG>", "junk</MSG>", 1),
		"SCHD never closed":      strings.Replace(good, "</SCHD>", "", 1),
		"SCHDX closing":          strings.Replace(good, "</SCHD>", "</SCHDX></SCHD>", 1),
		"too deep in a chunk":    strings.Replace(good, "<SRQT>2</SRQT>", "<SRQT><a><b><c><d><e><f><g><h><i><j><k><l><m>2</m></l></k></j></i></h></g></f></e></d></c></b></a></SRQT>", 1),
		"text between records":   insertAt(good, nth(good, "<FLTR>", 9), "oops"),
		"CRLF and entities":      strings.ReplaceAll(good, "\n", "\r\n"),
		"RECS in MSG and SCHD":   strings.Replace(good, "<SCHD>", "<RECS>12</RECS><SCHD>", 1),
		"self-closing FLTR":      strings.Replace(good, "</SCHD>", "<FLTR/></SCHD>", 1),
		"processing instruction": strings.Replace(good, "</SCHD>", "<?pi x?></SCHD>", 1),
	}
	// These keep a well-formed, record-only SCHD body, so the chunked path
	// commits and whatever follows is decoded by the remainder scanner.
	commitsExpected := map[string]bool{
		"syntax after SCHD": true, "text after SCHD": true, "CRLF and entities": true,
		"duplicate with MSG": true, "SCHD never closed": false,
	}
	commits := countParallelCommits(t)
	for name, raw := range tests {
		t.Run(name, func(t *testing.T) {
			before := *commits
			_, _ = assertSameOutcome(t, []byte(raw), 2) // the outcome itself is checked inside
			if want, listed := commitsExpected[name]; listed && (*commits > before) != want {
				t.Fatalf("parallel commit = %v, want %v", *commits > before, want)
			}
		})
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
	if got := closingTagIndex("</SCHDX></SCHD >", "SCHD"); got != 8 {
		t.Fatalf("closingTagIndex = %d", got)
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
