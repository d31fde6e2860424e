package sis

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flightfeed/flightfeed/internal/sis/sistest"
)

// A deferred snapshot holds its records without commands, and LoadRecords
// gives them back exactly as a plain decode holds them, in any chunking,
// with one worker or several.
func TestDeferredRecordsLoadAsDecoded(t *testing.T) {
	raw := sistest.DNLD(300)
	want, err := DecodeString(string(raw), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want.Deferred() {
		t.Fatal("a message decoded without DeferRecordsFrom is deferred")
	}
	for _, workers := range []int{1, 2, 4} {
		got, err := DecodeString(string(raw), Options{Workers: workers, DeferRecordsFrom: len(raw)})
		if err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		if !got.Deferred() {
			t.Fatalf("%d workers: a snapshot of DeferRecordsFrom bytes is not deferred", workers)
		}
		if len(got.Records) != len(want.Records) {
			t.Fatalf("%d workers: %d records, want %d", workers, len(got.Records), len(want.Records))
		}
		for i, r := range got.Records {
			w := want.Records[i]
			if r.Cmds != nil || r.FLID != w.FLID || r.Index != w.Index || r.OperationDay != w.OperationDay || r.Full != w.Full {
				t.Fatalf("%d workers: light record %d = %+v, want FLID %s, index %d, day %s, no commands", workers, i, r, w.FLID, w.Index, w.OperationDay)
			}
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Message{}, "Records", "Positions")); diff != "" {
			t.Fatalf("%d workers: message besides its records (-plain +deferred):\n%s", workers, diff)
		}
		for _, size := range []int{7, 150, 300} {
			var loaded []Record
			for lo := 0; lo < len(got.Records); lo += size {
				recs, err := got.LoadRecords(lo, min(lo+size, len(got.Records)))
				if err != nil {
					t.Fatalf("%d workers, chunks of %d: %v", workers, size, err)
				}
				loaded = append(loaded, recs...)
			}
			// reflect.DeepEqual first: cmp.Diff on 300 full records costs
			// seconds, nine times, and the mutation test runs this often.
			if !reflect.DeepEqual(want.Records, loaded) {
				t.Fatalf("%d workers, chunks of %d: loaded records (-plain +loaded):\n%s", workers, size, cmp.Diff(want.Records, loaded))
			}
		}
	}
}

// Below DeferRecordsFrom, or in a body of another shape (a comment among
// the records), or for a message that is no snapshot, the records keep
// their commands; LoadRecords then returns them.
func TestRecordsAreKeptWhenNotDeferred(t *testing.T) {
	raw := string(sistest.DNLD(20))
	commented := strings.Replace(raw, "<FLTR>", "<!-- a comment --><FLTR>", 1)
	adft := strings.Replace(raw, "<STYP>DNLD</STYP>", "<STYP>ADFT</STYP>", 1)
	// A record directly under MSG, before or after <SCHD>: LoadRecords
	// finds deferred records by their place inside <SCHD>.
	outside := "<FLTR><FLID>999</FLID><SODT>09SEP260000</SODT></FLTR>"
	before := strings.Replace(strings.Replace(raw, "<RECS>20</RECS>", "", 1), "<SCHD>", "<RECS>21</RECS>"+outside+"<SCHD>", 1)
	after := strings.Replace(strings.Replace(raw, "<RECS>20</RECS>", "<RECS>21</RECS>", 1), "</SCHD>", "</SCHD>"+outside, 1)
	for name, c := range map[string]struct {
		raw  string
		from int
	}{
		"smaller than DeferRecordsFrom": {raw, len(raw) + 1},
		"comment among the records":     {commented, 1},
		"ADFT":                          {adft, 1},
		"a record before SCHD":          {before, 1},
		"a record after SCHD":           {after, 1},
	} {
		msg, err := DecodeString(c.raw, Options{DeferRecordsFrom: c.from})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if msg.Deferred() {
			t.Fatalf("%s: deferred", name)
		}
		for _, r := range msg.Records {
			if len(r.Cmds) == 0 {
				t.Fatalf("%s: record %d has no commands", name, r.Index)
			}
		}
		recs, err := msg.LoadRecords(2, 5)
		if err != nil || len(recs) != 3 || recs[0].Index != 3 {
			t.Fatalf("%s: LoadRecords(2, 5) = %d records, %v", name, len(recs), err)
		}
		n := len(msg.Records)
		all, err := msg.LoadRecords(0, n)
		if err != nil || len(all) != n {
			t.Fatalf("%s: LoadRecords(0, %d) = %d records, %v", name, n, len(all), err)
		}
		for i, r := range all {
			if r.Index != i+1 {
				t.Fatalf("%s: record %d has Index %d", name, i+1, r.Index)
			}
		}
	}
	if _, err := (&Message{Records: make([]Record, 3)}).LoadRecords(2, 4); err == nil {
		t.Fatal("LoadRecords beyond the records: no error")
	}
	// An empty snapshot is no deferred one.
	msg, err := DecodeString(string(dnld()), Options{DeferRecordsFrom: 1})
	if err != nil || msg.Deferred() || len(msg.Records) != 0 {
		t.Fatalf("empty snapshot: %v, deferred %v", err, msg != nil && msg.Deferred())
	}
}

// LoadRecords takes any run lo..hi within the records, an empty one too
// (none to load), held or deferred alike.
func TestLoadRecordsEmptyRuns(t *testing.T) {
	raw := string(sistest.DNLD(20))
	for _, from := range []int{0, 1} {
		msg, err := DecodeString(raw, Options{DeferRecordsFrom: from})
		if err != nil || msg.Deferred() != (from == 1) {
			t.Fatalf("DeferRecordsFrom %d: %v", from, err)
		}
		for _, at := range []int{0, 7, 20} {
			if recs, err := msg.LoadRecords(at, at); err != nil || len(recs) != 0 {
				t.Fatalf("DeferRecordsFrom %d: LoadRecords(%d, %d) = %d records, %v", from, at, at, len(recs), err)
			}
		}
		if _, err := msg.LoadRecords(5, 4); err == nil {
			t.Fatalf("DeferRecordsFrom %d: LoadRecords(5, 4): no error", from)
		}
	}
}

// LoadRecords refuses records that no longer decode as the decode checked
// them (their input changed under the message) rather than return fewer
// or others.
func TestLoadRecordsRefusesChangedInput(t *testing.T) {
	raw := string(sistest.DNLD(20))
	for name, tc := range map[string]struct {
		input string
		want  string
	}{
		"a record broken": {strings.Replace(raw, "<FLID>100003</FLID>", "<FLID>x</FLID>", 1), "records 1–20 of a checked message no longer decode"},
		"another FLID":    {strings.Replace(raw, "<FLID>100003</FLID>", "<FLID>100099</FLID>", 1), "record 4 decoded again as FLID 100099, was 100003"},
	} {
		msg, err := DecodeString(raw, Options{DeferRecordsFrom: 1})
		if err != nil || !msg.Deferred() {
			t.Fatalf("%s: %v", name, err)
		}
		msg.Positions.input = tc.input // same length: the records stay where they were
		if recs, err := msg.LoadRecords(0, 20); err == nil || err.Error() != tc.want {
			t.Fatalf("%s: %d records, %v; want %s", name, len(recs), err, tc.want)
		}
	}
}

// A deferred message that the decoder refuses is refused as a plain decode
// refuses it (the chunked path falls back to the sequential one).
func TestDeferredDecodeRefusesAsPlain(t *testing.T) {
	raw := strings.Replace(string(sistest.DNLD(30)), "<FLID>100007</FLID>", "<FLID>100003</FLID>", 1)
	_, plain := DecodeString(raw, Options{})
	msg, deferred := DecodeString(raw, Options{DeferRecordsFrom: 1})
	if plain == nil || deferred == nil || plain.Error() != deferred.Error() {
		t.Fatalf("plain decode: %v; deferred: %v", plain, deferred)
	}
	if msg != nil && (msg.Deferred() || msg.Records != nil) {
		t.Fatal("a refused message keeps records")
	}
}

// A panic while LoadRecords decodes is raised in its caller's goroutine
// as a *WorkerPanic, as Decode raises one.
func TestLoadRecordsPanicReachesTheCaller(t *testing.T) {
	msg, err := DecodeString(string(sistest.DNLD(300)), Options{Workers: 2, DeferRecordsFrom: 1})
	if err != nil {
		t.Fatal(err)
	}
	old := onChunk
	onChunk = func(c chunk) {
		if c.firstIndex > 1 {
			panic("boom while loading")
		}
	}
	t.Cleanup(func() { onChunk = old })
	var got any
	func() {
		defer func() { got = recover() }()
		_, _ = msg.LoadRecords(0, 300)
	}()
	if wp, ok := got.(*WorkerPanic); !ok || wp.String() != "boom while loading" {
		t.Fatalf("recovered %#v, want the *WorkerPanic of the loading worker", got)
	}
}
