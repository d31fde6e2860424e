package sis

import (
	"errors"
	"strings"
	"testing"
)

// TestRejectionReasons holds one case per reason code: what is rejected,
// with which reason, where, and in which failure class.
func TestRejectionReasons(t *testing.T) {
	tests := []struct {
		reason   Reason
		raw      []byte
		opts     Options
		wantPath string
	}{
		{ReasonOversize, dnld(fltr("1", "")), Options{MaxBytes: 100}, ""},
		{ReasonMalformedXML, []byte("<MSG><META><SNDR>AODB</META></MSG>"), Options{}, "MSG/META/SNDR"},
		{ReasonBadEncoding, []byte(`<?xml version="1.0" encoding="GBK"?><MSG>` + "\xff" + `</MSG>`), Options{}, ""},
		{ReasonTooDeep, dnld(fltr("1", "<SRVT><A><B><C>x</C></B></A></SRVT>")), Options{MaxDepth: 6}, "MSG/SCHD/FLTR/SRVT/A/B"},
		{ReasonTooManyElements, dnld(fltr("1", "<SRVT><A/><B/></SRVT>")), Options{MaxElements: 15}, "MSG/SCHD/FLTR[1]/SRVT/B"},
		{ReasonTooManyAttributes, dnld(fltr("1", `<GTDT GTNO="1" X="2" Y="3"/>`)), Options{MaxElementAttributes: 2}, "MSG/SCHD/FLTR[1]/GTDT"},
		{ReasonTooManyItems, dnld(fltr("1", `<GTDT GTNO="1"/><GTDT GTNO="2"/>`)), Options{MaxCollectionItems: 1}, "MSG/SCHD/FLTR[1]/GTDT[2]"},
		{ReasonTooManyRecords, flop("ESTT", "<FLID>1</FLID><ESTT/>", "<FLID>2</FLID><ESTT/>"), Options{MaxRecords: 1}, "MSG/FLOP[2]"},
		{ReasonTooManyIgnored, dnld(fltr("1", "<XXXX/><YYYY/>")), Options{MaxIgnored: 1}, "MSG/SCHD/FLTR[1]/YYYY"},
		{ReasonValueTooLong, dnld(fltr("1", "<REMC>"+strings.Repeat("x", DefaultMaxValueBytes+1)+"</REMC>")), Options{}, "MSG/SCHD/FLTR[1]/REMC"},
		{ReasonBadRoot, []byte("<ROOT/>"), Options{}, "ROOT"},
		{ReasonMissingMeta, []byte("<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE></META></MSG>"), Options{}, "MSG/META/STYP"},
		{ReasonMetaFieldTooLong, []byte("<MSG><META><SNDR>" + strings.Repeat("A", 2750) + "</SNDR><SEQN>1</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>ESTT</STYP></META></MSG>"), Options{}, "MSG/META/SNDR"},
		{ReasonBadSeqn, []byte("<MSG><META><SNDR>A</SNDR><SEQN>12a</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>ESTT</STYP></META></MSG>"), Options{}, "MSG/META/SEQN"},
		{ReasonBadTime, dnld(fltr("1", "<CNCL>31FEB261000</CNCL>")), Options{}, "MSG/SCHD/FLTR[1]/CNCL"},
		{ReasonUnknownType, envelope("ZZZZ", "NONE", ""), Options{}, "MSG/META/TYPE"},
		{ReasonUnknownStyp, envelope("SCHD", "WEEK", ""), Options{}, "MSG/META/STYP"},
		{ReasonMissingBody, envelope("FLOP", "ESTT", ""), Options{}, "MSG/FLOP"},
		{ReasonMissingField, dnld("<FLTR><FLID>1</FLID><FLNO>CA1</FLNO></FLTR>"), Options{}, "MSG/SCHD/FLTR[1]/SODT"},
		{ReasonDuplicateField, dnld(fltr("1", "<FLNO>CA1</FLNO><FLNO>CA2</FLNO>")), Options{}, "MSG/SCHD/FLTR[1]/FLNO[2]"},
		{ReasonBadStructure, dnld(fltr("1", "<FLNO><X>CA1</X></FLNO>")), Options{}, "MSG/SCHD/FLTR[1]/FLNO"},
		{ReasonBadFLID, dnld(fltr("1234567890123", "")), Options{}, "MSG/SCHD/FLTR[1]/FLID"},
		{ReasonBadRecs, envelope("SCHD", "DNLD", "<SCHD><RECS>two</RECS></SCHD>"), Options{}, "MSG/SCHD/RECS"},
		{ReasonRecsOutOfRange, envelope("SCHD", "DNLD", "<RECS>10000</RECS><SCHD/>"), Options{}, "MSG/RECS"},
		{ReasonRecsMismatch, envelope("SCHD", "DNLD", "<SCHD><RECS>2</RECS>"+fltr("1", "")+"</SCHD>"), Options{}, "MSG/SCHD/RECS"},
		{ReasonDuplicateFLID, dnld(fltr("7", ""), fltr("007", "")), Options{}, "MSG/SCHD/FLTR[2]/FLID"},
		{ReasonSeqZeroMixed, dnld(fltr("1", `<GTDT GTNO="1"><GATE>A1</GATE></GTDT><GTDT GTNO="0"/>`)), Options{}, "MSG/SCHD/FLTR[1]/GTDT[2]@GTNO"},
		{ReasonBadSequence, dnld(fltr("1", `<CKDT CKNO="A"><CHKC>01</CHKC></CKDT>`)), Options{}, "MSG/SCHD/FLTR[1]/CKDT[1]@CKNO"},
	}
	covered := map[Reason]bool{}
	for _, tt := range tests {
		covered[tt.reason] = true
		t.Run(string(tt.reason), func(t *testing.T) {
			e := mustReject(t, tt.raw, tt.opts)
			if e.Reason != tt.reason {
				t.Fatalf("reason = %s (%v), want %s", e.Reason, e, tt.reason)
			}
			if e.Path != tt.wantPath {
				t.Errorf("path = %q, want %q", e.Path, tt.wantPath)
			}
			if e.Class != ClassOf(tt.reason) {
				t.Errorf("class = %s, want %s", e.Class, ClassOf(tt.reason))
			}
			if !strings.HasPrefix(e.Error(), "sis: "+string(tt.reason)) {
				t.Errorf("Error() = %q", e.Error())
			}
		})
	}
	for _, r := range Reasons {
		if !covered[r] {
			t.Errorf("reason %s has no test case", r)
		}
	}
}

func TestFailureClasses(t *testing.T) {
	unsupported := map[Reason]bool{ReasonUnknownType: true, ReasonUnknownStyp: true}
	for _, r := range Reasons {
		want := ClassIllegal
		if unsupported[r] {
			want = ClassUnsupported
		}
		if got := ClassOf(r); got != want {
			t.Errorf("ClassOf(%s) = %s, want %s", r, got, want)
		}
	}
	if ClassIllegal.String() != "ILLEGAL" || ClassUnsupported.String() != "UNSUPPORTED" || Class(0).String() != "UNKNOWN" {
		t.Fatal("class names")
	}
}

func TestErrorUnwrapsCauseAndNote(t *testing.T) {
	e := mustReject(t, dnld(fltr("12x", "")), Options{})
	if e.Err == nil || !errors.Is(e, e.Err) {
		t.Fatalf("cause not reachable: %v", e)
	}
	if r, ok := ReasonOf(e); !ok || r != ReasonBadFLID {
		t.Fatalf("ReasonOf = %s, %v", r, ok)
	}
	if _, ok := ReasonOf(errors.New("other")); ok {
		t.Fatal("ReasonOf matched a foreign error")
	}
	note := e.Note(12)
	if note != "BAD_FLID at " {
		t.Fatalf("Note(12) = %q", note)
	}
	long := (&Error{Reason: ReasonBadTime, Detail: "时间时间"}).Note(len("BAD_TIME: 时") + 1)
	if long != "BAD_TIME: 时" {
		t.Fatalf("Note cut inside a rune: %q", long)
	}
}

// TestErrorTextIsOneLine: the mailbox note and logs are line-oriented, so no
// rejection may render a line break or another control character, whatever
// the input or a wrapped parse error carries.
func TestErrorTextIsOneLine(t *testing.T) {
	meta := func(ddtm string) []byte {
		return []byte("<MSG><META><SNDR>A</SNDR><SEQN>1</SEQN><DDTM>" + ddtm + "</DDTM><TYPE>FLOP</TYPE><STYP>ESTT</STYP></META></MSG>")
	}
	tests := map[string]struct {
		raw    []byte
		reason Reason
	}{
		"META month out of range":  {meta("20261309101500"), ReasonBadTime},
		"META day out of range":    {meta("20260231101500123"), ReasonBadTime},
		"SIS time with line break": {dnld(fltr("1", "<NAAT>09SEP26\r\n1015</NAAT>")), ReasonBadTime},
		"SODT with a tab":          {dnld("<FLTR><FLID>1</FLID><SODT>09SEP26\t1015</SODT></FLTR>"), ReasonBadTime},
		"FLID with a line break":   {dnld(fltr("1\n2", "")), ReasonBadFLID},
		"RECS with a line break":   {envelope("SCHD", "DNLD", "<SCHD><RECS>1\n2</RECS></SCHD>"), ReasonBadRecs},
		"STYP with a line break":   {envelope("SCHD", "WE\nEK", ""), ReasonUnknownStyp},
		"sequence with a newline":  {dnld(fltr("1", "<GTDT GTNO=\"1&#10;2\"><GATE>A</GATE></GTDT>")), ReasonBadSequence},
		"syntax error":             {[]byte("<MSG>\n<META>\n</MSX>"), ReasonMalformedXML},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			e := mustReject(t, tt.raw, Options{})
			if e.Reason != tt.reason {
				t.Fatalf("got %v, want %s", e, tt.reason)
			}
			for _, text := range []string{e.Error(), e.Note(512)} {
				if strings.ContainsFunc(text, breaksLine) {
					t.Fatalf("text is not one line: %q", text)
				}
			}
		})
	}
}

func TestErrorEscapesControlCharacters(t *testing.T) {
	e := &Error{Reason: ReasonBadTime, Path: "MSG/META/DDTM", Detail: "a\nb\tc", Err: errors.New("x\r\x00y\u2028z\u0085")}
	want := `sis: BAD_TIME at MSG/META/DDTM: a\nb\tc: x\r\x00y\u2028z\u0085`
	if got := e.Error(); got != want {
		t.Fatalf("Error() = %s, want %s", got, want)
	}
	if got := e.Note(512); got != want[len("sis: "):] {
		t.Fatalf("Note = %s", got)
	}
	// A note of exactly its limit is whole.
	if got := e.Note(len(want) - len("sis: ")); got != want[len("sis: "):] {
		t.Fatalf("Note at its length = %s", got)
	}
	// Only what breaks a line is escaped: quotes stay as they are.
	quoted := &Error{Reason: ReasonBadTime, Detail: `O'Neil "x"` + "\n"}
	if got, want := quoted.Error(), `sis: BAD_TIME: O'Neil "x"\n`; got != want {
		t.Fatalf("Error() = %s, want %s", got, want)
	}
	if !errors.Is(mustReject(t, []byte("<MSG><META><SNDR>A</SNDR><SEQN>1</SEQN><DDTM>20261309101500</DDTM><TYPE>FLOP</TYPE><STYP>ESTT</STYP></META></MSG>"), Options{}), ErrBadMetaTime) {
		t.Fatal("a bad META time no longer wraps ErrBadMetaTime")
	}
}

// A record the decoder refuses is named by its FLID as well as its
// position, when it carries a readable FLID: the note
// leads a person to the flight. A record without one, or whose FLID itself
// is the fault, is named by position alone.
func TestRecordRefusalNamesItsFLID(t *testing.T) {
	tests := []struct {
		name     string
		raw      []byte
		wantFLID string
		wantNote string
	}{
		{"bad time, FLID first", dnld(fltr("1", ""), fltr("4711", "<CNCL>31FEB261000</CNCL>")), "4711",
			"BAD_TIME at MSG/SCHD/FLTR[2]/CNCL (FLID 4711): "},
		{"FLID after the faulty field", dnld("<FLTR><CKDT CKNO=\"A\"><CHKC>01</CHKC></CKDT><SODT>09SEP261015</SODT><FLID>0815</FLID></FLTR>"), "815",
			"BAD_SEQUENCE at MSG/SCHD/FLTR[1]/CKDT[1]@CKNO (FLID 815): "},
		{"missing SODT", dnld("<FLTR><FLID>12</FLID><FLNO>CA1</FLNO></FLTR>"), "12", "MISSING_FIELD at MSG/SCHD/FLTR[1]/SODT (FLID 12): "},
		{"duplicate FLID", dnld(fltr("7", ""), fltr("007", "")), "7", "DUPLICATE_FLID at MSG/SCHD/FLTR[2]/FLID (FLID 7): "},
		{"FLOP record", flop("ESTT", "<FLID>1</FLID><ESTT>09SEP261015</ESTT>", "<FLID>2</FLID><ESTT>09SEP261015</ESTT><ESTT>09SEP261020</ESTT>"), "2",
			"DUPLICATE_FIELD at MSG/FLOP[2]/ESTT[2] (FLID 2): "},
		{"bad FLID", dnld(fltr("12AB", "")), "", "BAD_FLID at MSG/SCHD/FLTR[1]/FLID: "},
		{"FLID twice", dnld("<FLTR><FLID>1</FLID><FLID>2</FLID><SODT>09SEP261015</SODT></FLTR>"), "", "DUPLICATE_FIELD at MSG/SCHD/FLTR[1]/FLID[2]: "},
		{"no FLID", dnld("<FLTR><SODT>09SEP261015</SODT></FLTR>"), "", "MISSING_FIELD at MSG/SCHD/FLTR[1]/FLID: "},
		{"outside a record", envelope("SCHD", "DNLD", "<SCHD><RECS>two</RECS></SCHD>"), "", "BAD_RECS at MSG/SCHD/RECS: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustReject(t, tt.raw, Options{})
			if e.FLID != tt.wantFLID {
				t.Errorf("FLID = %q, want %q (%v)", e.FLID, tt.wantFLID, e)
			}
			if note := e.Note(0); !strings.HasPrefix(note, tt.wantNote) {
				t.Errorf("note = %q, want it to start %q", note, tt.wantNote)
			}
		})
	}
}
