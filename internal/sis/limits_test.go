package sis

import (
	"encoding/xml"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/sis/sistest"
)

// TestDecodeLimits: a message exactly at a limit decodes, one over it is
// DEAD with the limit's reason, at the offending element.
func TestDecodeLimits(t *testing.T) {
	gtdts := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, `<GTDT GTNO="%d"><GATE>A</GATE></GTDT>`, i)
		}
		return b.String()
	}
	remc := strings.Repeat("x", 20)
	tests := map[string]struct {
		raw    []byte
		set    func(*Options, int)
		at     int // the count the message has: decodes with the limit at it, DEAD below
		reason Reason
		path   string
	}{
		// 8 elements in the envelope (MSG, META and its 6), SCHD, RECS, 3 a record.
		"elements in the message": {dnld(fltr("1", ""), fltr("2", "")), func(o *Options, n int) { o.MaxElements = n }, 16,
			ReasonTooManyElements, "MSG/SCHD/FLTR[2]/SODT"},
		"elements, outside records": {envelope("SCHD", "DNLD", "<SCHD><RECS>0</RECS><NOTE><A/></NOTE></SCHD>"), func(o *Options, n int) { o.MaxElements = n }, 12,
			ReasonTooManyElements, "MSG/SCHD/NOTE/A"},
		// FLTR, FLID, SODT and 3 × GTDT/GATE; META holds 7.
		"elements in one record": {dnld(fltr("1", gtdts(3))), func(o *Options, n int) { o.MaxRecordElements = n }, 9,
			ReasonTooManyElements, "MSG/SCHD/FLTR[1]/GTDT/GATE"},
		"elements in META": {flop("ESTT", "<FLID>1</FLID><ESTT/>"), func(o *Options, n int) { o.MaxRecordElements = n }, 7,
			ReasonTooManyElements, "MSG/META/STYP"},
		// MSG carries 2 attributes.
		"attributes of one element": {dnld(fltr("1", `<GTDT GTNO="1" A="1" B="2"/>`)), func(o *Options, n int) { o.MaxElementAttributes = n }, 3,
			ReasonTooManyAttributes, "MSG/SCHD/FLTR[1]/GTDT"},
		"attributes of the root": {flop("ESTT", "<FLID>1</FLID><ESTT/>"), func(o *Options, n int) { o.MaxElementAttributes = n }, 2,
			ReasonTooManyAttributes, "MSG"},
		"attributes in the message": {dnld(fltr("1", `<GTDT GTNO="1"/><GTDT GTNO="2"/>`)), func(o *Options, n int) { o.MaxAttributes = n }, 4,
			ReasonTooManyAttributes, "MSG/SCHD/FLTR[1]/GTDT"},
		"attributes, single quotes": {dnld(fltr("1", `<GTDT GTNO='1' A = 'x>y' B="2"/>`)), func(o *Options, n int) { o.MaxElementAttributes = n }, 3,
			ReasonTooManyAttributes, "MSG/SCHD/FLTR[1]/GTDT"},
		"items of one collection": {dnld(fltr("1", gtdts(3))), func(o *Options, n int) { o.MaxCollectionItems = n }, 3,
			ReasonTooManyItems, "MSG/SCHD/FLTR[1]/GTDT[3]"},
		"items of one record": {dnld(fltr("1", gtdts(1)+`<CKDT CKNO="1"/><SRVT/>`)), func(o *Options, n int) { o.MaxRecordItems = n }, 3,
			ReasonTooManyItems, "MSG/SCHD/FLTR[1]/SRVT[1]"},
		"items in the message": {dnld(fltr("1", gtdts(2)), fltr("2", gtdts(2))), func(o *Options, n int) { o.MaxItems = n }, 4,
			ReasonTooManyItems, "MSG/SCHD/FLTR[2]/GTDT[2]"},
		"FLOP records": {flop("ESTT", "<FLID>1</FLID><ESTT/>", "<FLID>2</FLID><ESTT/>", "<FLID>3</FLID><ESTT/>"), func(o *Options, n int) { o.MaxRecords = n }, 3,
			ReasonTooManyRecords, "MSG/FLOP[3]"},
		"FDEL records": {flop("FDEL", "<FLID>1</FLID>", "<FLID>2</FLID>"), func(o *Options, n int) { o.MaxRecords = n }, 2,
			ReasonTooManyRecords, "MSG/FLOP[2]"},
		"RECS": {dnld(fltr("1", ""), fltr("2", "")), func(o *Options, n int) { o.MaxRecords = n }, 2,
			ReasonTooManyRecords, "MSG/SCHD/RECS"},
		"FLTR records": {envelope("SCHD", "ADFT", "<SCHD>"+fltr("1", "")+fltr("2", "")+"</SCHD>"), func(o *Options, n int) { o.MaxRecords = n }, 2,
			ReasonTooManyRecords, "MSG/SCHD/FLTR[2]"},
		"ignored in a record": {dnld(fltr("1", `<XXXX/><FLNO a="1">CA1</FLNO><YYYY/>`)), func(o *Options, n int) { o.MaxIgnored = n }, 3,
			ReasonTooManyIgnored, "MSG/SCHD/FLTR[1]/FLNO@a"},
		"ignored outside records": {envelope("SCHD", "DNLD", "<NOTE/><SCHD><RECS>0</RECS><NOTE/></SCHD>"), func(o *Options, n int) { o.MaxIgnored = n }, 2,
			ReasonTooManyIgnored, "MSG/SCHD/NOTE"},
		// META's longest value is DDTM, 14 bytes.
		"scalar value": {dnld(fltr("1", "<REMC>"+remc+"</REMC>")), func(o *Options, n int) { o.MaxValueBytes = n }, 20,
			ReasonValueTooLong, "MSG/SCHD/FLTR[1]/REMC"},
		"value in pieces": {dnld(fltr("1", "<REMC>"+remc[:7]+"<!-- -->"+remc[:6]+"<![CDATA["+remc[:7]+"]]></REMC>")), func(o *Options, n int) { o.MaxValueBytes = n }, 20,
			ReasonValueTooLong, "MSG/SCHD/FLTR[1]/REMC"},
		"item value": {dnld(fltr("1", `<GTDT GTNO="1"><GATE>`+remc+`</GATE></GTDT>`)), func(o *Options, n int) { o.MaxValueBytes = n }, 20,
			ReasonValueTooLong, "MSG/SCHD/FLTR[1]/GTDT/GATE"},
		"attribute value": {dnld(fltr("1", `<GTDT GTNO="1" X="`+remc+`"/>`)), func(o *Options, n int) { o.MaxValueBytes = n }, 20,
			ReasonValueTooLong, "MSG/SCHD/FLTR[1]/GTDT@X"},
		"META value": {flop("ESTT", "<FLID>1</FLID><ESTT/>"), func(o *Options, n int) { o.MaxValueBytes = n }, 14,
			ReasonValueTooLong, "MSG/META/DDTM"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var at, below Options
			tt.set(&at, tt.at)
			tt.set(&below, tt.at-1)
			for _, workers := range []int{1, 2} {
				at.Workers, below.Workers = workers, workers
				if _, err := Decode(tt.raw, at); err != nil {
					t.Fatalf("at the limit: %v", err)
				}
				e := mustReject(t, tt.raw, below)
				if e.Reason != tt.reason || e.Path != tt.path || e.Class != ClassIllegal {
					t.Fatalf("got %v at %q, want %s at %q", e, e.Path, tt.reason, tt.path)
				}
			}
		})
	}
}

// TestAttributeRefusalNamesItsLimit: an element over MaxElementAttributes
// is refused for its own attributes, a message over MaxAttributes for the
// message's, even where the element holds exactly MaxElementAttributes.
func TestAttributeRefusalNamesItsLimit(t *testing.T) {
	raw := []byte(`<MSG><META><SNDR>A</SNDR><SEQN>1</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>GTDT</STYP></META>` +
		`<FLOP><FLID>1</FLID><GTDT GTNO="1"/><GTDT GTNO="2"/></FLOP></MSG>`)
	tests := []struct {
		opts Options
		want string
	}{
		{Options{MaxElementAttributes: 1, MaxAttributes: 1}, "sis: TOO_MANY_ATTRIBUTES at MSG/FLOP[1]/GTDT: more than 1 attributes in the message"},
		{Options{MaxElementAttributes: 1, MaxAttributes: 2}, ""},
	}
	for _, tt := range tests {
		_, err := Decode(raw, tt.opts)
		if fmt.Sprint(err) != tt.want && (err != nil || tt.want != "") {
			t.Errorf("%+v: %v, want %q", tt.opts, err, tt.want)
		}
	}
	e := mustReject(t, dnld(fltr("1", `<GTDT GTNO="1" A="1" B="2"/>`)), Options{MaxElementAttributes: 2, MaxAttributes: 100})
	if want := "sis: TOO_MANY_ATTRIBUTES at MSG/SCHD/FLTR[1]/GTDT: <GTDT> has more than 2 attributes"; e.Error() != want {
		t.Errorf("got %v, want %s", e, want)
	}
}

// TestMalformedTagIsLeftToTheParser: the attribute count read from the raw
// tag stops where the tag is not well-formed (cut off, an attribute
// without a value, an unclosed quote): the message is MALFORMED_XML, not
// refused for attributes the count made up.
func TestMalformedTagIsLeftToTheParser(t *testing.T) {
	full := `<MSG><META><SNDR>A</SNDR><SEQN>1</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>GTDT</STYP></META>` +
		`<FLOP><FLID>1</FLID><GTDT GTNO="1"/></FLOP></MSG>`
	cut := func(after string) string { return full[:strings.Index(full, "<GTDT ")] + after }
	for name, raw := range map[string]string{
		"cut in a name":         cut("<GTDT GTNO"),
		"cut after a name":      cut("<GTDT GTNO "),
		"cut after =":           cut("<GTDT GTNO="),
		"cut after = and space": cut("<GTDT GTNO= "),
		"cut in a value":        cut(`<GTDT GTNO="1 2`),
		"no value":              strings.Replace(full, `<GTDT GTNO="1"/>`, `<GTDT GTNO>" " A="2"</GTDT>`, 1),
	} {
		if e := mustReject(t, []byte(raw), Options{MaxElementAttributes: 1}); e.Reason != ReasonMalformedXML {
			t.Errorf("%s: %v, want MALFORMED_XML", name, e)
		}
	}
}

// TestBlankTextIsNotAValue: indentation or an empty value longer than
// MaxValueBytes is no value and costs nothing (it stays a substring).
func TestBlankTextIsNotAValue(t *testing.T) {
	ws := strings.Repeat(" \n\t", 10)
	msg, err := Decode(dnld(fltr("1", "<REMC>"+ws+"</REMC>"+ws+"<GTDT GTNO=\"1\">"+ws+"<GATE>A</GATE></GTDT>")), Options{MaxValueBytes: 16})
	if err != nil {
		t.Fatal(err)
	}
	if c := cmdOf(t, msg.Records[0], "REMC"); c.Op.String() != "CLEAR" {
		t.Fatalf("blank REMC = %+v", c)
	}
}

// TestHostileMessagesAreDeadEarly: hostile shapes that once cost hundreds of
// megabytes each to decode are DEAD under the default limits, and cheaply.
func TestHostileMessagesAreDeadEarly(t *testing.T) {
	repeat := func(n int, f func(b *strings.Builder, i int)) string {
		var b strings.Builder
		for i := range n {
			f(&b, i)
		}
		return b.String()
	}
	tests := map[string]struct {
		raw    []byte
		reason Reason
		path   string
	}{
		"3.9 M empty unknown elements in a FLOP (15.6 MB)": {
			flop("ESTT", "<FLID>1</FLID><ESTT/>"+strings.Repeat("<X/>", 3_900_000)), ReasonTooManyElements, "MSG/FLOP[1]/X"},
		"1.4 M attributes on one item (15.7 MB)": {
			flop("GTDT", `<FLID>1</FLID><GTDT GTNO="1"`+repeat(1_400_000, func(b *strings.Builder, i int) { fmt.Fprintf(b, ` a%d=""`, i) })+"/>"),
			ReasonTooManyAttributes, "MSG/FLOP[1]/GTDT"},
		"100 k GTDT items (5.5 MB)": {
			flop("GTDT", "<FLID>1</FLID>"+repeat(100_000, func(b *strings.Builder, i int) {
				fmt.Fprintf(b, `<GTDT GTNO="%d"><GATE>A1</GATE><GTYP>D</GTYP></GTDT>`, i+1)
			})),
			ReasonTooManyElements, "MSG/FLOP[1]/GTDT/GTYP"},
		"100 k GTDT items in 50 records": {
			flop("GTDT", repeat(50, func(b *strings.Builder, i int) {
				fmt.Fprintf(b, "</FLOP><FLOP><FLID>%d</FLID>", i+1)
				for j := range 2000 {
					fmt.Fprintf(b, `<GTDT GTNO="%d"/>`, j+1)
				}
			})[len("</FLOP><FLOP>"):]),
			ReasonTooManyItems, "MSG/FLOP[1]/GTDT[501]"},
		"one value in 100 k pieces": {
			flop("REMC", "<FLID>1</FLID><REMC>"+strings.Repeat("a<!---->", 100_000)+"</REMC>"), ReasonValueTooLong, "MSG/FLOP[1]/REMC"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			e := mustReject(t, tt.raw, Options{})
			if e.Reason != tt.reason || e.Path != tt.path {
				t.Fatalf("got %v at %q, want %s at %q", e, e.Path, tt.reason, tt.path)
			}
		})
	}
}

// TestAttributeFloodIsCountedBeforeParsing: a tag with 300,000
// attributes is refused from its raw bytes, before encoding/xml builds the
// attribute list (about 100 bytes an attribute) — wherever the tag stands,
// also right after another start tag.
func TestAttributeFloodIsCountedBeforeParsing(t *testing.T) {
	var attrs strings.Builder
	for i := range 300_000 {
		fmt.Fprintf(&attrs, ` a%d=""`, i)
	}
	flood := `<GTDT GTNO="1"` + attrs.String() + "/>"
	single := strings.ReplaceAll(flood, `""`, `''`)
	for name, raw := range map[string]string{
		"after an end tag":  string(flop("GTDT", "<FLID>1</FLID>"+flood)),
		"after a start tag": string(flop("GTDT", flood+"<FLID>1</FLID>")),
		"single quotes":     string(flop("GTDT", "<FLID>1</FLID>"+single)),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := DecodeString(raw, Options{})
		runtime.ReadMemStats(&after)
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonTooManyAttributes || e.Path != "MSG/FLOP[1]/GTDT" {
			t.Fatalf("%s: %v, want TOO_MANY_ATTRIBUTES at MSG/FLOP[1]/GTDT", name, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("%s: refusing a %d MB message allocated %d MB", name, len(raw)>>20, alloc>>20)
		}
	}
}

// TestTextInPiecesIsLinear: a value split into many pieces (by comments or
// CDATA sections) is accumulated in linear time and memory; appending to a
// string made 3.2 MB take 48 s.
func TestTextInPiecesIsLinear(t *testing.T) {
	raw := flop("REMC", "<FLID>1</FLID><REMC>"+strings.Repeat("a<!---->", 200_000)+"</REMC>")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msg, err := Decode(raw, Options{MaxValueBytes: 1 << 20})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := cmdOf(t, msg.Records[0], "REMC").Value; got != strings.Repeat("a", 200_000) {
		t.Fatalf("REMC has %d bytes", len(got))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("decoding a 1.6 MB message allocated %d MB", alloc>>20)
	}
}

// TestFullDayDNLDIsWithinDefaults: the largest real message, 9,999 fully
// populated flights (31.5 MB), decodes under the default limits.
func TestFullDayDNLDIsWithinDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("31.5 MB message")
	}
	raw := sistest.DNLD(MaxRecs)
	msg, err := Decode(raw, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Records) != MaxRecs {
		t.Fatalf("%d records", len(msg.Records))
	}
}

// TestParallelLimitsMatchSequential: a message-wide limit hit in any chunk,
// or only by the chunks' sum, gives the sequential outcome; at the limit
// the chunked path still commits.
func TestParallelLimitsMatchSequential(t *testing.T) {
	forceParallel(t)
	commits := countParallelCommits(t)
	good := string(sistest.DNLD(12))
	withIgnored := strings.Replace(strings.Replace(good, "<FLNO>", "<XXXX/><FLNO>", 5), "<RENO>", `<RENO a="1">`, 4)
	elements, attributes := countTokens(t, good)
	items := 0
	for _, rec := range mustDecode(t, []byte(good)).Records {
		for _, c := range rec.Cmds {
			items += len(c.Items)
		}
	}
	tests := []struct {
		name string
		raw  string
		set  func(*Options, int)
		at   int
	}{
		{"elements", good, func(o *Options, n int) { o.MaxElements = n }, elements},
		{"attributes", good, func(o *Options, n int) { o.MaxAttributes = n }, attributes},
		{"items", good, func(o *Options, n int) { o.MaxItems = n }, items},
		{"ignored", withIgnored, func(o *Options, n int) { o.MaxIgnored = n }, 9},
	}
	for _, tt := range tests {
		for _, limit := range []int{tt.at, tt.at - 1, tt.at / 2, tt.at / 5} {
			t.Run(fmt.Sprintf("%s %d of %d", tt.name, limit, tt.at), func(t *testing.T) {
				opts := Options{MaxDepth: 16}
				tt.set(&opts, limit)
				before := *commits
				_, err := assertSameOutcomeWith(t, []byte(tt.raw), opts, 3)
				if (err == nil) != (limit == tt.at) {
					t.Fatalf("limit %d of %d: %v", limit, tt.at, err)
				}
				if committed := *commits > before; committed != (err == nil) {
					t.Fatalf("parallel commit = %v with outcome %v", committed, err)
				}
			})
		}
	}
}

// countTokens counts the start tags and attributes of a message.
func countTokens(t *testing.T, raw string) (elements, attributes int) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(raw))
	for {
		tok, err := dec.RawToken()
		if err != nil {
			return elements, attributes
		}
		if start, ok := tok.(xml.StartElement); ok {
			elements++
			attributes += len(start.Attr)
		}
	}
}
