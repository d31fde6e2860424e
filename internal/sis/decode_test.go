package sis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/flightfeed/flightfeed/internal/flight"
)

func TestDecodeMeta(t *testing.T) {
	raw := []byte(`<MSG><META>
		<SNDR> AODB </SNDR><RCVR>RMS</RCVR><SEQN>000042</SEQN><DTTM>20260909101500123</DTTM>
		<TYPE>flop</TYPE><STYP>estt</STYP><SORC>S</SORC><MGID>M1</MGID><RMID>R1</RMID><APOT>PEK</APOT><XTRA>x</XTRA>
	</META><FLOP><FLID>1</FLID><ESTT>09SEP261020</ESTT></FLOP></MSG>`)
	msg := mustDecode(t, raw)
	want := Meta{
		Sndr: "AODB", Rcvr: "RMS", Seqn: "000042", SeqnNum: 42,
		TimeTag: "DTTM", Time: "20260909101500123",
		ParsedTime: time.Date(2026, 9, 9, 10, 15, 0, 123e6, DefaultLocation),
		Type:       "flop", Styp: "estt", Sorc: "S", Mgid: "M1", Rmid: "R1", Apot: "PEK",
	}
	if diff := cmp.Diff(want, msg.Meta); diff != "" {
		t.Fatalf("meta (-want +got):\n%s", diff)
	}
	if msg.Meta.IdentityKey() != "AODB|flop|estt|000042" {
		t.Fatalf("identity key %q", msg.Meta.IdentityKey())
	}
	if msg.Kind != KindFLOP {
		t.Fatalf("lower-case TYPE/STYP kind = %s", msg.Kind)
	}
}

// TestMetaFieldLengthBound: a META field may have MaxMetaFieldChars
// characters (not bytes) after trimming, and the rejection names the field
// and its length.
func TestMetaFieldLengthBound(t *testing.T) {
	meta := func(sndr string) []byte {
		return []byte("<MSG><META><SNDR>" + sndr + "</SNDR><SEQN>1</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>ESTT</STYP></META>" +
			"<FLOP><FLID>1</FLID><ESTT/></FLOP></MSG>")
	}
	at := strings.Repeat("北", MaxMetaFieldChars)
	msg := mustDecode(t, meta("  "+at+"  "))
	if msg.Meta.Sndr != at {
		t.Fatalf("SNDR = %q", msg.Meta.Sndr)
	}
	e := mustReject(t, meta(at+"x"), Options{})
	if e.Reason != ReasonMetaFieldTooLong || e.Path != "MSG/META/SNDR" || !strings.Contains(e.Detail, "65 characters, more than 64") {
		t.Fatalf("got %v", e)
	}
}

func TestParseMetaTime(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "20260909101500", want: time.Date(2026, 9, 9, 10, 15, 0, 0, DefaultLocation)},
		{in: "20260909101500999", want: time.Date(2026, 9, 9, 10, 15, 0, 999e6, DefaultLocation)},
		{in: "1788920100000", want: time.UnixMilli(1788920100000)}, // 13 digits: epoch ms
		{in: "20261309101500", wantErr: true},
		{in: "2026090910150", want: time.UnixMilli(2026090910150)},
		{in: "202609091015", wantErr: true},
		{in: "2026-09-09 10:15:00", wantErr: true},
		{in: "202609091015001", wantErr: true},
		{in: "", wantErr: true},
		// Digits only: a sign or a separator is no META time, whatever its length.
		{in: "+788920100000", wantErr: true},
		{in: "20260909101500.12", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMetaTime(tt.in, DefaultLocation)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseMetaTime(%q) = %v, want error", tt.in, got)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("ParseMetaTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestMetaRejections(t *testing.T) {
	base := func(meta string) []byte {
		return []byte("<MSG><META>" + meta + "</META><FLOP><FLID>1</FLID><ESTT/></FLOP></MSG>")
	}
	full := "<SNDR>A</SNDR><SEQN>1</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>ESTT</STYP>"
	tests := map[string]struct {
		raw    []byte
		reason Reason
		path   string
	}{
		"no META":          {[]byte("<MSG><FLOP/></MSG>"), ReasonMissingMeta, "MSG/META"},
		"empty MSG":        {[]byte("<MSG/>"), ReasonMissingMeta, "MSG/META"},
		"blank SNDR":       {base(strings.Replace(full, "<SNDR>A</SNDR>", "<SNDR> </SNDR>", 1)), ReasonMissingMeta, "MSG/META/SNDR"},
		"no time":          {base(strings.Replace(full, "<DDTM>20260909101500</DDTM>", "", 1)), ReasonMissingMeta, "MSG/META/DDTM"},
		"DDTM and DTTM":    {base(full + "<DTTM>20260909101500</DTTM>"), ReasonDuplicateField, "MSG/META/DTTM"},
		"two SEQN":         {base(full + "<SEQN>2</SEQN>"), ReasonDuplicateField, "MSG/META/SEQN"},
		"7-digit SEQN":     {base(strings.Replace(full, "<SEQN>1</SEQN>", "<SEQN>1234567</SEQN>", 1)), ReasonBadSeqn, "MSG/META/SEQN"},
		"bad META time":    {base(strings.Replace(full, "20260909101500", "2026-09-09", 1)), ReasonBadTime, "MSG/META/DDTM"},
		"nested TYPE":      {base(strings.Replace(full, "<TYPE>FLOP</TYPE>", "<TYPE><X/></TYPE>", 1)), ReasonBadStructure, "MSG/META/TYPE"},
		"text in MSG":      {[]byte("<MSG>hello<META/></MSG>"), ReasonBadStructure, "MSG"},
		"second META":      {[]byte("<MSG><META>" + full + "</META><META/></MSG>"), ReasonDuplicateField, "MSG/META[2]"},
		"no root":          {[]byte("  "), ReasonMalformedXML, ""},
		"text before root": {[]byte("x<MSG/>"), ReasonMalformedXML, ""},
		"unclosed":         {[]byte("<MSG><META>"), ReasonMalformedXML, "MSG/META"},
		"MSG never closed": {[]byte("<MSG>"), ReasonMalformedXML, "MSG"},
		"long SNDR":        {base(strings.Replace(full, "<SNDR>A</SNDR>", "<SNDR>"+strings.Repeat("A", 2750)+"</SNDR>", 1)), ReasonMetaFieldTooLong, "MSG/META/SNDR"},
		"long TYPE":        {base(strings.Replace(full, "<TYPE>FLOP</TYPE>", "<TYPE>FLOP"+strings.Repeat("P", 61)+"</TYPE>", 1)), ReasonMetaFieldTooLong, "MSG/META/TYPE"},
		"long STYP":        {base(strings.Replace(full, "<STYP>ESTT</STYP>", "<STYP>"+strings.Repeat("T", 3000)+"</STYP>", 1)), ReasonMetaFieldTooLong, "MSG/META/STYP"},
		"long SEQN":        {base(strings.Replace(full, "<SEQN>1</SEQN>", "<SEQN>"+strings.Repeat("0", 3000)+"1</SEQN>", 1)), ReasonMetaFieldTooLong, "MSG/META/SEQN"},
		"long DDTM":        {base(strings.Replace(full, "20260909101500", strings.Repeat("2", 65), 1)), ReasonMetaFieldTooLong, "MSG/META/DDTM"},
		"long DTTM":        {base(strings.Replace(strings.ReplaceAll(full, "DDTM", "DTTM"), "20260909101500", strings.Repeat("2", 65), 1)), ReasonMetaFieldTooLong, "MSG/META/DTTM"},
		"long RCVR":        {base(full + "<RCVR>" + strings.Repeat("中", 65) + "</RCVR>"), ReasonMetaFieldTooLong, "MSG/META/RCVR"},
		"long SORC":        {base(full + "<SORC>" + strings.Repeat("S", 65) + "</SORC>"), ReasonMetaFieldTooLong, "MSG/META/SORC"},
		"long MGID":        {base(full + "<MGID>" + strings.Repeat("M", 65) + "</MGID>"), ReasonMetaFieldTooLong, "MSG/META/MGID"},
		"long RMID":        {base(full + "<RMID>" + strings.Repeat("R", 65) + "</RMID>"), ReasonMetaFieldTooLong, "MSG/META/RMID"},
		"long APOT":        {base(full + "<APOT>" + strings.Repeat("P", 65) + "</APOT>"), ReasonMetaFieldTooLong, "MSG/META/APOT"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			e := mustReject(t, tt.raw, Options{})
			if e.Reason != tt.reason || e.Path != tt.path {
				t.Fatalf("got %s at %q (%v), want %s at %q", e.Reason, e.Path, e, tt.reason, tt.path)
			}
		})
	}
}

// TestMissingMetaFieldNamesIt: the refusal of a missing META field names
// the field, and the send time by both of its tags.
func TestMissingMetaFieldNamesIt(t *testing.T) {
	full := "<SNDR>A</SNDR><SEQN>1</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>ESTT</STYP>"
	for field, want := range map[string]string{
		"<SNDR>A</SNDR>":              "required META field SNDR is missing or empty",
		"<DDTM>20260909101500</DDTM>": "required META field DDTM|DTTM is missing or empty",
	} {
		raw := []byte("<MSG><META>" + strings.Replace(full, field, "", 1) + "</META><FLOP><FLID>1</FLID><ESTT/></FLOP></MSG>")
		if e := mustReject(t, raw, Options{}); e.Reason != ReasonMissingMeta || e.Detail != want {
			t.Errorf("without %s: %v, want MISSING_META: %s", field, e, want)
		}
	}
}

// TestMetaIsReadWithinTheLimits: the limits hold before META is read; a
// refusal there keeps its own reason.
func TestMetaIsReadWithinTheLimits(t *testing.T) {
	e := mustReject(t, flop("ESTT", "<FLID>1</FLID><ESTT/>"), Options{MaxDepth: 1})
	if e.Reason != ReasonTooDeep || e.Path != "MSG" {
		t.Fatalf("got %v at %q, want TOO_DEEP at MSG", e, e.Path)
	}
}

// TestMaxBytesBound: a message of exactly MaxBytes bytes decodes, one byte
// more is OVERSIZE, for Decode and DecodeString alike.
func TestMaxBytesBound(t *testing.T) {
	raw := flop("ESTT", "<FLID>1</FLID><ESTT/>")
	n := int64(len(raw))
	if _, err := Decode(raw, Options{MaxBytes: n}); err != nil {
		t.Fatalf("Decode at MaxBytes: %v", err)
	}
	if _, err := DecodeString(string(raw), Options{MaxBytes: n}); err != nil {
		t.Fatalf("DecodeString at MaxBytes: %v", err)
	}
	want := fmt.Sprintf("sis: OVERSIZE: %d bytes exceed the limit of %d", n, n-1)
	if _, err := Decode(raw, Options{MaxBytes: n - 1}); err == nil || err.Error() != want {
		t.Fatalf("Decode over MaxBytes: %v, want %s", err, want)
	}
	if _, err := DecodeString(string(raw), Options{MaxBytes: n - 1}); err == nil || err.Error() != want {
		t.Fatalf("DecodeString over MaxBytes: %v, want %s", err, want)
	}
}

func TestMalformedXMLVariants(t *testing.T) {
	good := string(dnld(fltr("1", "")))
	tests := map[string]string{
		"mismatched close":       strings.Replace(good, "</FLTR>", "</FLTX>", 1),
		"broken closing tag":     strings.Replace(good, "</FLTR>", "</FLTR", 1),
		"second root":            good + "<MSG/>",
		"text after root":        good + "trailing",
		"invalid UTF-8":          strings.Replace(good, "<FLID>1", "<FLID>\xff1", 1),
		"undefined entity":       strings.Replace(good, "<FLID>1", "<FLID>&foo;1", 1),
		"smart-quoted attr":      strings.Replace(good, "<FLID>1</FLID>", `<FLID>1</FLID><GTDT GTNO=“1”/>`, 1),
		"truncated":              good[:len(good)/2],
		"truncated after a <":    good[:strings.Index(good, "</FLTR>")+1],
		"closing tag after root": good + "</MSG>",
		"doctype entity attack":  `<!DOCTYPE MSG [<!ENTITY a "aaaa">]><MSG>&a;</MSG>`,
	}
	for name, raw := range tests {
		t.Run(name, func(t *testing.T) {
			e := mustReject(t, []byte(raw), Options{})
			if e.Reason != ReasonMalformedXML {
				t.Fatalf("got %v, want MALFORMED_XML", e)
			}
			if smart := strings.Contains(e.Detail, "typographic quotes"); smart != (name == "smart-quoted attr") {
				t.Fatalf("detail %q: names typographic quotes = %v", e.Detail, smart)
			}
		})
	}
	// An element left open at the end of the input is named.
	for raw, want := range map[string]string{
		"<MSG>":       "sis: MALFORMED_XML at MSG: unexpected end of input: <MSG> not closed",
		"<MSG><META>": "sis: MALFORMED_XML at MSG/META: unexpected end of input: <META> not closed",
	} {
		if e := mustReject(t, []byte(raw), Options{}); e.Error() != want {
			t.Errorf("%s: %v, want %s", raw, e, want)
		}
	}
}

func TestSnapshotRecords(t *testing.T) {
	msg := mustDecode(t, dnld(
		fltr("121112312", `<FLNO>CA100</FLNO><ESTT></ESTT><GTDT GTNO="1"><GATE>A1</GATE></GTDT><XXXX>1</XXXX><FLNX a="1"/>`),
		"<FLTR><FLID>2</FLID><SODT>09Sep262355</SODT></FLTR>",
	))
	if msg.Kind != KindSnapshot || !msg.IsFullSnapshot() || msg.Recs != 2 || len(msg.Records) != 2 {
		t.Fatalf("kind %s recs %d records %d", msg.Kind, msg.Recs, len(msg.Records))
	}
	r := msg.Records[0]
	if !r.Full || r.OperationDay != "2026-09-09" || r.Index != 1 {
		t.Fatalf("record = %+v", r)
	}
	if c := r.For("FLNO"); c.Op != flight.OpSet || c.Value != "CA100" {
		t.Fatalf("FLNO = %+v", c)
	}
	if c := r.For("ESTT"); c.Op != flight.OpClear {
		t.Fatalf("empty ESTT = %+v", c)
	}
	if c := r.For("CKDT"); c.Op != flight.OpClear {
		t.Fatalf("absent CKDT in snapshot = %+v", c)
	}
	if diff := cmp.Diff(map[string]int{"XXXX": 1, "FLNX": 1}, msg.IgnoredTags); diff != "" {
		t.Fatalf("ignored tags: %s", diff)
	}
	if msg.Records[1].OperationDay != "2026-09-09" {
		t.Fatalf("mixed-case SODT day = %q", msg.Records[1].OperationDay)
	}
}

func TestSnapshotLayouts(t *testing.T) {
	tests := map[string]struct {
		styp, body string
		records    int
		kind       Kind
	}{
		"RECS under MSG":        {"DNLD", "<RECS>1</RECS><SCHD>" + fltr("1", "") + "</SCHD>", 1, KindSnapshot},
		"RECS after records":    {"RESP", "<SCHD>" + fltr("1", "") + fltr("2", "") + "<RECS>2</RECS></SCHD>", 2, KindSnapshot},
		"FLTR directly in MSG":  {"DNLD", "<RECS>1</RECS>" + fltr("1", ""), 1, KindSnapshot},
		"empty snapshot":        {"DNLD", "<SCHD><RECS>0</RECS></SCHD>", 0, KindSnapshot},
		"empty, RECS only":      {"RESP", "<RECS>0000</RECS>", 0, KindSnapshot},
		"ADFT without RECS":     {"ADFT", "<SCHD><FLTR><FLID>9</FLID><FLNO>CA9</FLNO></FLTR></SCHD>", 1, KindADFT},
		"ADFT duplicate FLIDs":  {"ADFT", "<SCHD>" + fltr("9", "") + fltr("9", "") + "</SCHD>", 2, KindADFT},
		"unknown SCHD children": {"DNLD", "<SCHD><RECS>1</RECS><NOTE>x</NOTE>" + fltr("1", "") + "</SCHD><TAIL/>", 1, KindSnapshot},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			msg := mustDecode(t, envelope("SCHD", tt.styp, tt.body))
			if msg.Kind != tt.kind || len(msg.Records) != tt.records {
				t.Fatalf("kind %s records %d", msg.Kind, len(msg.Records))
			}
			for _, r := range msg.Records {
				if r.Full != (tt.kind == KindSnapshot) {
					t.Fatalf("Full = %v for %s", r.Full, tt.kind)
				}
			}
		})
	}
	adft := mustDecode(t, envelope("SCHD", "ADFT", "<SCHD><FLTR><FLID>9</FLID></FLTR></SCHD>"))
	if adft.Recs != -1 || adft.Records[0].OperationDay != "" {
		t.Fatalf("ADFT without RECS/SODT: recs %d day %q", adft.Recs, adft.Records[0].OperationDay)
	}
}

func TestSnapshotRejections(t *testing.T) {
	tests := map[string]struct {
		raw    []byte
		reason Reason
		path   string
	}{
		"no body":                {envelope("SCHD", "DNLD", ""), ReasonMissingBody, "MSG/SCHD"},
		"snapshot without RECS":  {envelope("SCHD", "DNLD", "<SCHD>"+fltr("1", "")+"</SCHD>"), ReasonMissingField, "MSG/SCHD/RECS"},
		"two RECS":               {envelope("SCHD", "DNLD", "<RECS>1</RECS><SCHD><RECS>1</RECS>"+fltr("1", "")+"</SCHD>"), ReasonDuplicateField, "MSG/SCHD/RECS"},
		"two SCHD":               {envelope("SCHD", "DNLD", "<SCHD><RECS>0</RECS></SCHD><SCHD/>"), ReasonDuplicateField, "MSG/SCHD[2]"},
		"more FLTR than RECS":    {envelope("SCHD", "DNLD", "<SCHD><RECS>1</RECS>"+fltr("1", "")+fltr("2", "")+"</SCHD>"), ReasonRecsMismatch, "MSG/SCHD/FLTR[2]"},
		"RECS below FLTR count":  {envelope("SCHD", "DNLD", "<SCHD>"+fltr("1", "")+fltr("2", "")+"<RECS>1</RECS></SCHD>"), ReasonRecsMismatch, "MSG/SCHD/RECS"},
		"negative RECS":          {envelope("SCHD", "DNLD", "<SCHD><RECS>-1</RECS></SCHD>"), ReasonBadRecs, "MSG/SCHD/RECS"},
		"huge RECS":              {envelope("SCHD", "DNLD", "<SCHD><RECS>99999999999999999999</RECS></SCHD>"), ReasonRecsOutOfRange, "MSG/SCHD/RECS"},
		"nested RECS":            {envelope("SCHD", "DNLD", "<SCHD><RECS><N>1</N></RECS></SCHD>"), ReasonBadStructure, "MSG/SCHD/RECS"},
		"text in SCHD":           {envelope("SCHD", "DNLD", "<SCHD>oops<RECS>0</RECS></SCHD>"), ReasonBadStructure, "MSG/SCHD"},
		"text in FLTR":           {dnld("<FLTR>oops<FLID>1</FLID></FLTR>"), ReasonBadStructure, "MSG/SCHD/FLTR[1]"},
		"missing FLID":           {dnld("<FLTR><SODT>09SEP261015</SODT></FLTR>"), ReasonMissingField, "MSG/SCHD/FLTR[1]/FLID"},
		"two FLIDs":              {dnld(fltr("1", "<FLID>2</FLID>")), ReasonDuplicateField, "MSG/SCHD/FLTR[1]/FLID[2]"},
		"empty FLID":             {dnld(fltr("", "")), ReasonBadFLID, "MSG/SCHD/FLTR[1]/FLID"},
		"signed FLID":            {dnld(fltr("-5", "")), ReasonBadFLID, "MSG/SCHD/FLTR[1]/FLID"},
		"empty SODT in snapshot": {dnld("<FLTR><FLID>1</FLID><SODT/></FLTR>"), ReasonMissingField, "MSG/SCHD/FLTR[1]/SODT"},
		"bad SODT":               {dnld("<FLTR><FLID>1</FLID><SODT>2026-09-09</SODT></FLTR>"), ReasonBadTime, "MSG/SCHD/FLTR[1]/SODT"},
		"bad NAAT":               {dnld(fltr("1", "<NAAT>99XXX991099</NAAT>")), ReasonBadTime, "MSG/SCHD/FLTR[1]/NAAT"},
		"two FDIV":               {dnld(fltr("1", "<FDIV>a</FDIV><FDIV>b</FDIV>")), ReasonDuplicateField, "MSG/SCHD/FLTR[1]/FDIV[2]"},
		"item key twice":         {dnld(fltr("1", `<GTDT GTNO="1"><GATE>A</GATE><GATE>B</GATE></GTDT>`)), ReasonDuplicateField, "MSG/SCHD/FLTR[1]/GTDT[1]/GATE"},
		"attr and child clash":   {dnld(fltr("1", `<GTDT GTNO="1"><GTNO>2</GTNO></GTDT>`)), ReasonDuplicateField, "MSG/SCHD/FLTR[1]/GTDT[1]/GTNO"},
		"seq child not a number": {dnld(fltr("1", `<ROUT><RTNO>x</RTNO></ROUT>`)), ReasonBadSequence, "MSG/SCHD/FLTR[1]/ROUT[1]/RTNO"},
		"ADFT bad SODT":          {envelope("SCHD", "ADFT", "<SCHD><FLTR><FLID>9</FLID><SODT>x</SODT></FLTR></SCHD>"), ReasonBadTime, "MSG/SCHD/FLTR[1]/SODT"},
		"empty RECS":             {envelope("SCHD", "DNLD", "<SCHD><RECS> </RECS></SCHD>"), ReasonBadRecs, "MSG/SCHD/RECS"},
		"RECS not closed":        {envelope("SCHD", "DNLD", "<SCHD><RECS>1</SCHD>"), ReasonMalformedXML, "MSG/SCHD/RECS"},
		"RECS 9999, no records":  {envelope("SCHD", "DNLD", "<SCHD><RECS>09999</RECS></SCHD>"), ReasonRecsMismatch, "MSG/SCHD/RECS"},
		"RECS 0, then a record":  {envelope("SCHD", "DNLD", "<SCHD><RECS>0</RECS>"+fltr("1", "")+"</SCHD>"), ReasonRecsMismatch, "MSG/SCHD/FLTR[1]"},
		"anomaly key twice":      {dnld(fltr("1", "<FDIV><DDES>HKG</DDES><DDES>CAN</DDES></FDIV>")), ReasonDuplicateField, "MSG/SCHD/FLTR[1]/FDIV/DDES"},
		"record item key twice":  {dnld(fltr("1", "<SRVT><SRTC>A</SRTC><SRTC>B</SRTC></SRVT>")), ReasonDuplicateField, "MSG/SCHD/FLTR[1]/SRVT[1]/SRTC"},
		"nested key twice":       {dnld(fltr("1", "<SRVT><DETAIL><WHO>a</WHO><WHO>b</WHO></DETAIL></SRVT>")), ReasonDuplicateField, "MSG/SCHD/FLTR[1]/SRVT[1]/DETAIL/WHO"},
		"leaf, then nested attr": {dnld(fltr("1", `<SRVT><DETAIL BY="a"/><DETAIL BY="b"><WHO>c</WHO></DETAIL></SRVT>`)), ReasonDuplicateField, "MSG/SCHD/FLTR[1]/SRVT[1]/DETAIL@BY"},
		"nested, then leaf attr": {dnld(fltr("1", `<SRVT><DETAIL BY="a"><WHO>c</WHO></DETAIL><DETAIL BY="b"/></SRVT>`)), ReasonDuplicateField, "MSG/SCHD/FLTR[1]/SRVT[1]/DETAIL@BY"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			e := mustReject(t, tt.raw, Options{})
			if e.Reason != tt.reason || e.Path != tt.path {
				t.Fatalf("got %s at %q (%v), want %s at %q", e.Reason, e.Path, e, tt.reason, tt.path)
			}
		})
	}
}

// TestRecsRefusalsSayWhy: a RECS refusal quotes the declared value and
// says what it was compared with.
func TestRecsRefusalsSayWhy(t *testing.T) {
	tests := map[string]struct {
		body string
		want string
	}{
		"too many digits": {"<SCHD><RECS>99999999999999999999</RECS></SCHD>",
			"sis: RECS_OUT_OF_RANGE at MSG/SCHD/RECS: RECS 99999999999999999999 is outside 0–9999"},
		"wraps a uint64 to 5": {"<SCHD><RECS>18446744073709551621</RECS></SCHD>",
			"sis: RECS_OUT_OF_RANGE at MSG/SCHD/RECS: RECS 18446744073709551621 is outside 0–9999"},
		"records precede it": {"<SCHD>" + fltr("1", "") + fltr("2", "") + "<RECS>1</RECS></SCHD>",
			"sis: RECS_MISMATCH at MSG/SCHD/RECS: RECS 1 but 2 FLTR records precede it"},
	}
	for name, tt := range tests {
		if e := mustReject(t, envelope("SCHD", "DNLD", tt.body), Options{}); e.Error() != tt.want {
			t.Errorf("%s: %v, want %s", name, e, tt.want)
		}
	}
}

// TestSeqZeroMixedNamesTheFirstOfEach: the refusal points at the first
// clear marker and names the first real item.
func TestSeqZeroMixedNamesTheFirstOfEach(t *testing.T) {
	items := `<GTDT GTNO="1"><GATE>A1</GATE></GTDT><GTDT GTNO="0"/><GTDT GTNO="2"><GATE>A2</GATE></GTDT><GTDT GTNO="0"/>`
	e := mustReject(t, dnld(fltr("1", items)), Options{})
	want := "sis: SEQ_ZERO_MIXED at MSG/SCHD/FLTR[1]/GTDT[2]@GTNO (FLID 1): GTNO=0 (clear marker) mixed with real GTDT items such as GTDT[1]"
	if e.Error() != want {
		t.Fatalf("got %v\nwant %s", e, want)
	}
	items = `<GTDT GTNO="0"/><GTDT GTNO="1"><GATE>A1</GATE></GTDT><GTDT GTNO="2"><GATE>A2</GATE></GTDT><GTDT GTNO="0"/>`
	e = mustReject(t, dnld(fltr("1", items)), Options{})
	want = "sis: SEQ_ZERO_MIXED at MSG/SCHD/FLTR[1]/GTDT[1]@GTNO (FLID 1): GTNO=0 (clear marker) mixed with real GTDT items such as GTDT[2]"
	if e.Error() != want {
		t.Fatalf("got %v\nwant %s", e, want)
	}
}

func TestTooManyRecords(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= MaxRecs+1; i++ {
		b.WriteString("<FLTR><FLID>1</FLID></FLTR>")
	}
	e := mustReject(t, envelope("SCHD", "ADFT", "<SCHD>"+b.String()+"</SCHD>"), Options{})
	if e.Reason != ReasonRecsOutOfRange || e.Path != "MSG/SCHD/FLTR[10000]" {
		t.Fatalf("got %v", e)
	}
}

func TestRejectedMessageKeepsMetaOnly(t *testing.T) {
	msg, err := Decode(dnld(fltr("1", ""), fltr("1", "")), Options{})
	if err == nil || msg == nil {
		t.Fatalf("msg %v err %v", msg, err)
	}
	if msg.Meta.Sndr != "AODB" || msg.Records != nil {
		t.Fatalf("partial message = %+v", msg)
	}
	unknown, err := Decode(envelope("ZZZZ", "DNLD", "<RECS>1</RECS><ZZZZ/>"), Options{})
	if r, _ := ReasonOf(err); r != ReasonUnknownType || unknown == nil || unknown.Meta.Type != "ZZZZ" {
		t.Fatalf("unknown type: %v %+v", err, unknown)
	}
	keyless, err := Decode(envelope("ARPT", "DNLD", "<RECS>1</RECS><ARPT/>"), Options{})
	if r, _ := ReasonOf(err); r != ReasonMissingField || keyless == nil || keyless.Kind != KindReference || keyless.Reference != nil {
		t.Fatalf("refused reference data: %v %+v", err, keyless)
	}
	if msg, err := Decode([]byte("<x"), Options{}); msg != nil || err == nil {
		t.Fatalf("malformed before META: %v %v", msg, err)
	}
}

func TestTextValues(t *testing.T) {
	msg := mustDecode(t, flop("REMC",
		"<FLID>1</FLID><REMC>  A &amp; B &lt;ok&gt; “quoted” 中文  </REMC><FLNO><![CDATA[CA<1>]]></FLNO>"+
			"<FDIV DDES=\"HKG\"><!-- c -->weather<!-- d --></FDIV><MAFL>line1\r\nline2</MAFL>"))
	r := msg.Records[0]
	if c := cmdOf(t, r, "REMC"); c.Value != "  A & B <ok> “quoted” 中文  " {
		t.Fatalf("REMC = %q", c.Value)
	}
	if c := cmdOf(t, r, "FLNO"); c.Value != "CA<1>" {
		t.Fatalf("FLNO = %q", c.Value)
	}
	if c := cmdOf(t, r, "FDIV"); c.Anomaly["TEXT"] != "weather" {
		t.Fatalf("FDIV = %+v", c)
	}
	if c := cmdOf(t, r, "MAFL"); c.Items[0]["TEXT"] != "line1\nline2" {
		t.Fatalf("MAFL = %q", c.Items[0]["TEXT"])
	}
	// White space before a comment is part of the value that follows it.
	msg = mustDecode(t, flop("REMC", "<FLID>1</FLID><REMC> <!-- c -->ON TIME</REMC>"))
	if c := cmdOf(t, msg.Records[0], "REMC"); c.Value != " ON TIME" {
		t.Fatalf("REMC after a comment = %q", c.Value)
	}
}

func TestItemFlatteningKeepsEverything(t *testing.T) {
	msg := mustDecode(t, flop("SRVT", `<FLID>1</FLID><SRVT xsi:type="x" SRNO="1">
			<SRTC CODE="A">ATN</SRTC>
			<DETAIL><WHO>crew</WHO><WHEN>09SEP261000</WHEN></DETAIL>
			note
		</SRVT>`))
	want := flight.Item{
		"xsi:type": "x", "SRNO": "1", "SRTC": "ATN", "SRTC@CODE": "A",
		"DETAIL/WHO": "crew", "DETAIL/WHEN": "09SEP261000", "TEXT": "note",
	}
	if diff := cmp.Diff(want, cmdOf(t, msg.Records[0], "SRVT").Items[0]); diff != "" {
		t.Fatalf("item (-want +got):\n%s", diff)
	}
	// Deeper: an element with children keeps its attributes as
	// "CHILD@ATTR" and its own text under "CHILD"; a leaf's text is
	// verbatim, white space included.
	msg = mustDecode(t, flop("SRVT", `<FLID>1</FLID><SRVT><DETAIL BY="ops">late<WHO>crew</WHO><NOTE> </NOTE></DETAIL></SRVT>`))
	want = flight.Item{"DETAIL@BY": "ops", "DETAIL": "late", "DETAIL/WHO": "crew", "DETAIL/NOTE": " "}
	if diff := cmp.Diff(want, cmdOf(t, msg.Records[0], "SRVT").Items[0]); diff != "" {
		t.Fatalf("nested item (-want +got):\n%s", diff)
	}
}

// TestDeclaredEncodingOfRawBytes: a body that is not UTF-8 is read in the
// encoding its XML declaration names; bytes invalid in that encoding, or an
// encoding the decoder does not read, are BAD_ENCODING; without a
// declaration (or with UTF-8) invalid UTF-8 stays MALFORMED_XML.
func TestDeclaredEncodingOfRawBytes(t *testing.T) {
	body := func(decl, remc string) []byte {
		raw := string(flop("REMC", "<FLID>1</FLID><REMC>"+remc+"</REMC>"))
		return []byte(strings.Replace(raw, `encoding="UTF-8"`, decl, 1))
	}
	encode := func(enc encoding.Encoding, s string) string {
		out, err := enc.NewEncoder().String(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	accepted := map[string]struct {
		raw  []byte
		want string
	}{
		"GBK":                   {body(`encoding="GBK"`, "\xb1\xb1\xbe\xa9\xca\xd7\xb6\xbc"), "北京首都"},
		"gbk, single quotes":    {body(`encoding='gbk'`, "\xb1\xb1\xbe\xa9\xca\xd7\xb6\xbc"), "北京首都"},
		"GB2312":                {body(`encoding = "GB2312"`, "\xb1\xb1\xbe\xa9"), "北京"},
		"GB18030":               {body(`encoding="GB18030"`, encode(simplifiedchinese.GB18030, "北京首都 €😀")), "北京首都 €😀"},
		"GB18030 keeps U+FFFD":  {body(`encoding="GB18030"`, encode(simplifiedchinese.GB18030, "首都\uFFFD")), "首都\uFFFD"},
		"two U+FFFD in a row":   {body(`encoding="GB18030"`, encode(simplifiedchinese.GB18030, "首都\uFFFD\uFFFD")), "首都\uFFFD\uFFFD"},
		"ISO-8859-1":            {body(`encoding="ISO-8859-1"`, "Z\xfcrich"), "Zürich"},
		"Latin-1":               {body(`encoding="latin1"`, "Z\xfcrich"), "Zürich"},
		"windows-1252":          {body(`encoding="windows-1252"`, "\x93Z\xfcrich\x94 \x80"), "“Zürich” €"},
		"UTF-8 bytes, GBK decl": {body(`encoding="GBK"`, "北京首都"), "北京首都"},
		"BOM, then GBK":         {append([]byte("\xEF\xBB\xBF"), body(`encoding="GBK"`, "\xb1\xb1\xbe\xa9\xca\xd7\xb6\xbc")...), "北京首都"},
	}
	for name, tt := range accepted {
		t.Run(name, func(t *testing.T) {
			msg := mustDecode(t, tt.raw)
			if c := cmdOf(t, msg.Records[0], "REMC"); c.Value != tt.want {
				t.Fatalf("REMC = %q, want %q", c.Value, tt.want)
			}
		})
	}
	rejected := map[string]struct {
		raw    []byte
		reason Reason
		detail string
	}{
		"invalid GBK":           {body(`encoding="GBK"`, "\xb1\xb1\xff\xbe\xa9"), ReasonBadEncoding, "nor valid GBK"},
		"invalid GBK trail":     {body(`encoding="GBK"`, "\xb1\x20"), ReasonBadEncoding, "nor valid GBK"},
		"truncated GB18030":     {body(`encoding="GB18030"`, "\x81\x30\x81"), ReasonBadEncoding, "nor valid GB18030"},
		"unsupported encoding":  {body(`encoding="EBCDIC-US"`, "Z\xfcrich"), ReasonBadEncoding, `"EBCDIC-US" is not supported`},
		"UTF-16":                {[]byte("\xFF\xFE<\x00M\x00S\x00G\x00/\x00>\x00"), ReasonBadEncoding, "UTF-16"},
		"UTF-16 big-endian":     {[]byte("\xFE\xFF\x00<\x00M\x00S\x00G\x00/\x00>"), ReasonBadEncoding, "UTF-16"},
		"U+FFFD, then invalid":  {body(`encoding="GB18030"`, encode(simplifiedchinese.GB18030, "首都\uFFFD")+"\xff"), ReasonBadEncoding, "nor valid GB18030"},
		"UTF-8 declared":        {body(`encoding="UTF-8"`, "Z\xfcrich"), ReasonMalformedXML, ""},
		"no encoding declared":  {body(`standalone="yes"`, "Z\xfcrich"), ReasonMalformedXML, ""},
		"no declaration at all": {[]byte(strings.SplitN(string(body("", "Z\xfcrich")), "?>", 2)[1]), ReasonMalformedXML, ""},
	}
	for name, tt := range rejected {
		t.Run(name, func(t *testing.T) {
			e := mustReject(t, tt.raw, Options{})
			if e.Reason != tt.reason || !strings.Contains(e.Error(), tt.detail) {
				t.Fatalf("got %v, want %s with %q", e, tt.reason, tt.detail)
			}
		})
	}
	e := mustReject(t, body(`encoding="GBK"`, "\xb1\xb1\xff"), Options{})
	if want := "invalid byte sequence at offset"; !strings.Contains(e.Error(), want) {
		t.Fatalf("detail does not locate the bad bytes: %v", e)
	}
}

// TestDeclaredEncodingIsIgnored: bytes that are valid UTF-8 are UTF-8 even
// when the declaration names another encoding (the mailbox converts).
func TestDeclaredEncodingIsIgnored(t *testing.T) {
	raw := strings.Replace(string(flop("FLNO", "<FLID>1</FLID><FLNO>国航</FLNO>")), `encoding="UTF-8"`, `encoding="GBK"`, 1)
	msg := mustDecode(t, []byte(raw))
	if c := cmdOf(t, msg.Records[0], "FLNO"); c.Value != "国航" {
		t.Fatalf("FLNO = %q", c.Value)
	}
}

// TestUTF8BOM: a byte order mark before the document — at the very start,
// or (as some exports write it) right after the XML declaration — is not
// text before the root element.
func TestUTF8BOM(t *testing.T) {
	const bom = "\xEF\xBB\xBF"
	body := string(flop("FLNO", "<FLID>1</FLID><FLNO>国航</FLNO>"))
	decl, rest, _ := strings.Cut(body, "?>")
	tests := map[string]string{
		"before the declaration":   bom + body,
		"without a declaration":    bom + rest,
		"after the declaration":    decl + "?>" + bom + rest,
		"both":                     bom + decl + "?>" + bom + rest,
		"after the declaration, 2": decl + "?>\r\n" + bom + "\n" + rest,
	}
	for name, raw := range tests {
		t.Run(name, func(t *testing.T) {
			msg := mustDecode(t, []byte(raw))
			if c := cmdOf(t, msg.Records[0], "FLNO"); c.Value != "国航" {
				t.Fatalf("FLNO = %q", c.Value)
			}
			fromString, err := DecodeString(raw, Options{})
			if err != nil || !cmp.Equal(msg, fromString) {
				t.Fatalf("DecodeString: %v", err)
			}
		})
	}
	if e := mustReject(t, []byte(bom+"x"+rest), Options{}); e.Reason != ReasonMalformedXML {
		t.Fatalf("text after a BOM: %v", e)
	}
}

func TestLocationOption(t *testing.T) {
	utc := Options{Location: time.UTC}
	msg, err := Decode(dnld("<FLTR><FLID>1</FLID><SODT>09SEP262330</SODT></FLTR>"), utc)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Records[0].OperationDay != "2026-09-09" || msg.Meta.ParsedTime.Location() != time.UTC {
		t.Fatalf("day %q meta %v", msg.Records[0].OperationDay, msg.Meta.ParsedTime)
	}
}

// TestDeclaredEncodingLabel: the encoding of a body that is not UTF-8 is
// read from an XML declaration at the very start, from its encoding=
// attribute with a quoted value, within the first 512 bytes; anything
// else names no encoding (and the bytes are left to encoding/xml).
func TestDeclaredEncodingLabel(t *testing.T) {
	tests := map[string]string{
		`<?xml version="1.0" encoding="GBK"?><MSG/>`:                                 "GBK",
		`<?xml version='1.0' encoding='latin1'?><MSG/>`:                              "latin1",
		"<?xml version=\"1.0\"\n encoding = \" GB18030 \"?>":                         "GB18030",
		`<?xml version="1.0"?><MSG/>`:                                                "",
		`<?xml version="1.0"?><MSG encoding="GBK"/>`:                                 "",
		`<?xmx encoding="GBK"?><MSG/>`:                                               "",
		`<?xml-stylesheet encoding="GBK"?><MSG/>`:                                    "",
		`<MSG><?x encoding="GBK"?></MSG>`:                                            "",
		`<?xml version="1.0" encoding:"GBK"?><MSG/>`:                                 "",
		`<?xml version="1.0" encoding=xGBKx?><MSG/>`:                                 "",
		`<?xml version="1.0" encoding=?>`:                                            "",
		`<?xml version="1.0" encoding="GBK?><MSG/>`:                                  "",
		`<?xml version="1.0" encoding="GBK"` + strings.Repeat(" ", 512) + `?><MSG/>`: "",
		`<?xml`: "",
		"":      "",
	}
	for raw, want := range tests {
		if got := declaredEncoding(raw); got != want {
			t.Errorf("declaredEncoding(%.60q) = %q, want %q", raw, got, want)
		}
	}
}

// TestUpperIsASCII: TYPE and STYP compare in upper case; only a–z change.
func TestUpperIsASCII(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "SCHD": "SCHD", "schd": "SCHD", "Upd": "UPD", "aZz": "AZZ", "z": "Z", "a`{z": "A`{Z", "ü": "ü",
	} {
		if got := upper(in); got != want {
			t.Errorf("upper(%q) = %q, want %q", in, got, want)
		}
	}
	msg := mustDecode(t, envelope("Glst", "Upd", "<GLST><GCOD>B7</GCOD></GLST>"))
	if msg.Kind != KindReference || msg.Reference.Op != RefUpsert {
		t.Fatalf("mixed-case TYPE/STYP: kind %s %+v", msg.Kind, msg.Reference)
	}
}

// TestKnownStyp: the subtypes the interface defines for some type.
func TestKnownStyp(t *testing.T) {
	for styp, want := range map[string]bool{
		"DNLD": true, "RESP": true, "ADFT": true, "ADD": true, "UPD": true, "DEL": true,
		"ESTT": true, "FDEL": true, "HNAG": true, "NONE": true,
		"": false, "WEEK": false, "adft": false, "NON": false,
	} {
		if got := KnownStyp(styp); got != want {
			t.Errorf("KnownStyp(%q) = %v, want %v", styp, got, want)
		}
	}
}

func TestKindNames(t *testing.T) {
	for k, want := range map[Kind]string{KindUnknown: "UNKNOWN", KindSnapshot: "SNAPSHOT", KindADFT: "ADFT",
		KindFLOP: "FLOP", KindFDEL: "FDEL", KindReference: "REFERENCE", KindNotApplied: "NOT_APPLIED",
		KindNotApplied + 1: "UNKNOWN", Kind(99): "UNKNOWN"} {
		if b, _ := k.MarshalText(); string(b) != want {
			t.Errorf("Kind(%d) = %s, want %s", k, b, want)
		}
	}
}

func TestDecodeStringMatchesDecode(t *testing.T) {
	raw := dnld(fltr("1", `<FLNO>CA&amp;1</FLNO><GTDT GTNO="1"><GATE>A1</GATE></GTDT>`))
	fromBytes := mustDecode(t, raw)
	fromString, err := DecodeString(string(raw), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromBytes, fromString); diff != "" {
		t.Fatalf("DecodeString differs (-Decode +DecodeString):\n%s", diff)
	}
	if _, err := DecodeString(string(raw), Options{MaxBytes: 10}); err == nil {
		t.Fatal("oversize string accepted")
	}
}
