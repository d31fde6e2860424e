package sis

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/flight"
)

const flopHead = "<FLID>121112312</FLID><FFID>CA-CA101-D-09SEP261015-D</FFID>"

// TestFlopKinds covers every non-scalar FLOP kind: the record it carries and
// the command it becomes.
func TestFlopKinds(t *testing.T) {
	tests := []struct {
		styp string
		body string
		want flight.Command
	}{
		{"GTDT", `<GTDT GTNO="1"><GATE>A1</GATE><GTYP>D</GTYP></GTDT><GTDT GTNO="3"><GATE>B2</GATE><GTYP>I</GTYP></GTDT>`,
			flight.Command{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"GTNO": "1", "GATE": "A1", "GTYP": "D"}, {"GTNO": "3", "GATE": "B2", "GTYP": "I"}}}},
		{"GTDT", `<GTDT GTNO="0"/>`, flight.Command{Tag: "GTDT", Op: flight.OpClear}},
		{"CKDT", `<CKDT CKNO="1"><CHKC>01</CHKC><CCLS>X</CCLS></CKDT><CKDT CKNO="2"><CHKC>01</CHKC><CCLS>Y</CCLS></CKDT>`,
			flight.Command{Tag: "CKDT", Op: flight.OpReplace, Items: []flight.Item{{"CKNO": "1", "CHKC": "01", "CCLS": "X"}, {"CKNO": "2", "CHKC": "01", "CCLS": "Y"}}}},
		{"CKDT", `<CKDT CKNO="0"/><CKDT CKNO="00"/>`, flight.Command{Tag: "CKDT", Op: flight.OpClear}},
		{"CLDT", `<CLDT CLNO="”1”"><BELT>B01</BELT></CLDT>`, flight.Command{Tag: "CLDT", Op: flight.OpReplace, Items: []flight.Item{{"CLNO": "”1”", "BELT": "B01"}}}},
		{"PSDT", `<PSDT PSNO="1"><PSST>504</PSST><STST>09SEP260237</STST></PSDT>`, flight.Command{Tag: "PSDT", Op: flight.OpReplace, Items: []flight.Item{{"PSNO": "1", "PSST": "504", "STST": "09SEP260237"}}}},
		{"CHDT", `<CHDT CHNO="1"><CHUT>CH0021</CHUT></CHDT>`, flight.Command{Tag: "CHDT", Op: flight.OpReplace, Items: []flight.Item{{"CHNO": "1", "CHUT": "CH0021"}}}},
		{"DELY", `<DELY CODE="YY" STRT="15DEC031605" DURA="0200">YYYYYYY</DELY><DELY CODE="XX" DURA="0201">XX &amp; X</DELY>`,
			flight.Command{Tag: "DELY", Op: flight.OpReplace, Items: []flight.Item{{"CODE": "YY", "STRT": "15DEC031605", "DURA": "0200", "TEXT": "YYYYYYY"}, {"CODE": "XX", "DURA": "0201", "TEXT": "XX & X"}}}},
		{"DELY", `<DELY/>`, flight.Command{Tag: "DELY", Op: flight.OpClear}},
		{"ABTM", `<ABTM ASNO="1"><ABDG>212</ABDG><ABOP>D</ABOP><AOTM>10DEC061343</AOTM></ABTM>`,
			flight.Command{Tag: "ABTM", Op: flight.OpReplace, Items: []flight.Item{{"ASNO": "1", "ABDG": "212", "ABOP": "D", "AOTM": "10DEC061343"}}}},
		{"CHOT", `<CHOT CSNO="1"><CHTM>15DEC031350</CHTM><CHID>ON</CHID><CHST>S211</CHST></CHOT>`,
			flight.Command{Tag: "CHOT", Op: flight.OpReplace, Items: []flight.Item{{"CSNO": "1", "CHTM": "15DEC031350", "CHID": "ON", "CHST": "S211"}}}},
		{"ROUT", `<ROUT RTNO = "1"><APCD>XIY</APCD><SCAT>16NOV200710</SCAT></ROUT>`,
			flight.Command{Tag: "ROUT", Op: flight.OpReplace, Items: []flight.Item{{"RTNO": "1", "APCD": "XIY", "SCAT": "16NOV200710"}}}},
		{"ERUT", `<ERUT RTNO="1"><APCD>SHA</APCD></ERUT><ERUT RTNO="2"><APCD>CTU</APCD><SCAT>15DEC211345</SCAT><SCDT>15DEC211640</SCDT></ERUT>`,
			flight.Command{Tag: "ERUT", Op: flight.OpReplace, Items: []flight.Item{{"RTNO": "1", "APCD": "SHA"}, {"RTNO": "2", "APCD": "CTU", "SCAT": "15DEC211345", "SCDT": "15DEC211640"}}}},
		{"ERUT", `<ERUT><RTNO>0</RTNO></ERUT>`, flight.Command{Tag: "ERUT", Op: flight.OpClear}},
		{"FDIV", `<FDIV DDES="HKG" DDIR="TO">weather</FDIV>`, flight.Command{Tag: "FDIV", Op: flight.OpSet, Anomaly: flight.Item{"DDES": "HKG", "DDIR": "TO", "TEXT": "weather"}}},
		{"FDIV", `<FDIV/>`, flight.Command{Tag: "FDIV", Op: flight.OpClear}},
		{"FRET", `<FRET REID="A">weather return</FRET>`, flight.Command{Tag: "FRET", Op: flight.OpSet, Anomaly: flight.Item{"REID": "A", "TEXT": "weather return"}}},
		{"FRET", "<FRET>  </FRET>", flight.Command{Tag: "FRET", Op: flight.OpClear}},
		{"FLAB", `<FLAB ARES="O">over shot</FLAB>`, flight.Command{Tag: "FLAB", Op: flight.OpSet, Anomaly: flight.Item{"ARES": "O", "TEXT": "over shot"}}},
		{"FLAB", `<FLAB></FLAB>`, flight.Command{Tag: "FLAB", Op: flight.OpClear}},
		{"SRVT", `<SRVT><SRTC>ATN</SRTC><SRQT>2</SRQT><SRPR></SRPR><SARR>由于机器问题延误服务事务</SARR></SRVT>`,
			flight.Command{Tag: "SRVT", Op: flight.OpReplace, Items: []flight.Item{{"SRTC": "ATN", "SRQT": "2", "SRPR": "", "SARR": "由于机器问题延误服务事务"}}}},
		{"SRVT", `<SRVT/>`, flight.Command{Tag: "SRVT", Op: flight.OpClear}},
		{"VIPF", `<VIPF>Minister, 2 pax</VIPF>`, flight.Command{Tag: "VIPF", Op: flight.OpReplace, Items: []flight.Item{{"TEXT": "Minister, 2 pax"}}}},
		{"MAFL", `<MAFL><MFAL>MU</MFAL><MFFN>MU5101</MFFN></MAFL><MAFL><MFAL>KL</MFAL><MFFN>KL4301</MFFN></MAFL>`,
			flight.Command{Tag: "MAFL", Op: flight.OpReplace, Items: []flight.Item{{"MFAL": "MU", "MFFN": "MU5101"}, {"MFAL": "KL", "MFFN": "KL4301"}}}},
		{"PSHT", `<PSHT PSHN="1"><PSTM>10AUG181346</PSTM><PSID>IN</PSID><PUST>504</PUST></PSHT>`,
			flight.Command{Tag: "PSHT", Op: flight.OpReplace, Items: []flight.Item{{"PSHN": "1", "PSTM": "10AUG181346", "PSID": "IN", "PUST": "504"}}}},
		{"TIPT", `<TIPT><TRTM>10AUG181350</TRTM><TRST>503</TRST></TIPT><TIPT><TRTM>10AUG181344</TRTM><TRST>504</TRST></TIPT>`,
			flight.Command{Tag: "TIPT", Op: flight.OpReplace, Items: []flight.Item{{"TRTM": "10AUG181350", "TRST": "503"}, {"TRTM": "10AUG181344", "TRST": "504"}}}},
		{"PORT", `<PORT PTNO="1"><PTCD>G12</PTCD><PAX><ADLT>120</ADLT><CHLD>3</CHLD></PAX><NOTE LANG="zh">团队</NOTE></PORT>`,
			flight.Command{Tag: "PORT", Op: flight.OpReplace, Items: []flight.Item{{"PTNO": "1", "PTCD": "G12", "PAX/ADLT": "120", "PAX/CHLD": "3", "NOTE": "团队", "NOTE@LANG": "zh"}}}},
		{"CNCL", `<CNCL>09SEP261200</CNCL>`, flight.Command{Tag: "CNCL", Op: flight.OpSet, Value: "09SEP261200"}},
		{"CNCL", `<CNCL/>`, flight.Command{Tag: "CNCL", Op: flight.OpClear}},
	}
	for _, tt := range tests {
		t.Run(tt.styp+"/"+tt.want.Op.String(), func(t *testing.T) {
			msg := mustDecode(t, flop(tt.styp, flopHead+tt.body))
			if msg.Kind != KindFLOP || len(msg.Records) != 1 {
				t.Fatalf("kind %s, %d records", msg.Kind, len(msg.Records))
			}
			rec := msg.Records[0]
			if rec.FLID != 121112312 || rec.Full {
				t.Fatalf("FLID %d full %v", rec.FLID, rec.Full)
			}
			if diff := cmp.Diff(tt.want, cmdOf(t, rec, tt.want.Tag)); diff != "" {
				t.Fatalf("command (-want +got):\n%s", diff)
			}
			if ffid := cmdOf(t, rec, "FFID"); ffid.Op != flight.OpSet {
				t.Fatalf("FFID = %+v", ffid)
			}
		})
	}
}

// TestFlopScalarKinds covers every single-value field through the subtype
// named after it (its own, or the group it names: VIPP carries VIPP and
// VIPR): Set with the original string, Clear when empty.
func TestFlopScalarKinds(t *testing.T) {
	for _, spec := range flight.Fields() {
		if spec.Kind != flight.KindScalar {
			continue
		}
		sub, ok := LookupFlopSubtype(spec.Tag)
		if spec.Tag == "EXSS" {
			// Not a field of the interface's FLOP: the EXSS subtype is the
			// external-status group EXSC/EXSR (TestGroupedFlopSubtypes); a
			// snapshot may still carry an EXSS element.
			continue
		}
		if !ok || sub.Delete || !slices.Contains(sub.Fields, spec.Tag) {
			t.Fatalf("no scalar FLOP subtype for %s: %+v", spec.Tag, sub)
		}
		value := " value " + spec.Tag
		if spec.TypedTimeColumn != "" {
			value = "09sep261015"
		}
		t.Run(spec.Tag, func(t *testing.T) {
			msg := mustDecode(t, flop(spec.Tag, "<FLID>5</FLID><"+spec.Tag+">"+value+"</"+spec.Tag+">"))
			got := cmdOf(t, msg.Records[0], spec.Tag)
			if got.Op != flight.OpSet || got.Value != value {
				t.Fatalf("Set = %+v, want verbatim %q", got, value)
			}
			msg = mustDecode(t, flop(spec.Tag, "<FLID>5</FLID><"+spec.Tag+"/>"))
			if got := cmdOf(t, msg.Records[0], spec.Tag); got.Op != flight.OpClear {
				t.Fatalf("empty = %+v, want CLEAR", got)
			}
		})
	}
}

func TestFlopSubtypeTableCoversEveryField(t *testing.T) {
	for _, spec := range flight.Fields() {
		sub, ok := LookupFlopSubtype(spec.Tag)
		if !ok {
			t.Errorf("field %s has no FLOP subtype", spec.Tag)
			continue
		}
		if sub.Collections != CollectionsReplace {
			t.Errorf("%s collection mode = %d", spec.Tag, sub.Collections)
		}
		for _, f := range sub.Fields {
			if _, ok := flight.Lookup(f); !ok {
				t.Errorf("subtype %s names unmapped field %s", sub.Styp, f)
			}
		}
	}
	// The subtypes that are no field's name: FDEL and the groups whose
	// name is none of their fields'.
	var others []string
	for styp, sub := range flopSubtypes {
		if _, ok := flight.Lookup(styp); !ok {
			others = append(others, styp)
		}
		if !sub.Delete && len(sub.Fields) == 0 {
			t.Errorf("subtype %s carries no field", styp)
		}
	}
	slices.Sort(others)
	if diff := cmp.Diff([]string{"FDEL", "HNAG"}, others); diff != "" {
		t.Errorf("subtypes named after no field (-want +got):\n%s", diff)
	}
}

// TestGroupedFlopSubtypes: a subtype that names a group carries the
// group's fields (the interface's handling agents, external status and
// VIP subtypes); each member present is Set (empty = Clear), each member
// absent is Cleared, and another mapped field the record carries is an
// increment.
func TestGroupedFlopSubtypes(t *testing.T) {
	tests := []struct {
		styp, body string
		want       map[string]flight.Command // every command of the record but FFID's
	}{
		{"HNAG", "<FHAG>101</FHAG><PHAG>102</PHAG><MHAG>103</MHAG>", map[string]flight.Command{
			"FHAG": {Tag: "FHAG", Op: flight.OpSet, Value: "101"},
			"PHAG": {Tag: "PHAG", Op: flight.OpSet, Value: "102"},
			"MHAG": {Tag: "MHAG", Op: flight.OpSet, Value: "103"},
		}},
		{"HNAG", "<FHAG>101</FHAG>", map[string]flight.Command{
			"FHAG": {Tag: "FHAG", Op: flight.OpSet, Value: "101"},
			"PHAG": {Tag: "PHAG", Op: flight.OpClear},
			"MHAG": {Tag: "MHAG", Op: flight.OpClear},
		}},
		{"HNAG", "<FHAG/><MHAG>7</MHAG><ESTT>09SEP261020</ESTT>", map[string]flight.Command{
			"FHAG": {Tag: "FHAG", Op: flight.OpClear},
			"PHAG": {Tag: "PHAG", Op: flight.OpClear},
			"MHAG": {Tag: "MHAG", Op: flight.OpSet, Value: "7"},
			"ESTT": {Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261020"},
		}},
		{"EXSS", "<EXSC>DLY</EXSC><EXSR>late inbound</EXSR>", map[string]flight.Command{
			"EXSC": {Tag: "EXSC", Op: flight.OpSet, Value: "DLY"},
			"EXSR": {Tag: "EXSR", Op: flight.OpSet, Value: "late inbound"},
		}},
		{"EXSS", "<EXSC>DLY</EXSC>", map[string]flight.Command{
			"EXSC": {Tag: "EXSC", Op: flight.OpSet, Value: "DLY"},
			"EXSR": {Tag: "EXSR", Op: flight.OpClear},
		}},
		{"VIPP", "<VIPP>2</VIPP><VIPR>1</VIPR>", map[string]flight.Command{
			"VIPP": {Tag: "VIPP", Op: flight.OpSet, Value: "2"},
			"VIPR": {Tag: "VIPR", Op: flight.OpSet, Value: "1"},
		}},
		{"VIPP", "", map[string]flight.Command{
			"VIPP": {Tag: "VIPP", Op: flight.OpClear},
			"VIPR": {Tag: "VIPR", Op: flight.OpClear},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.styp+" "+tt.body, func(t *testing.T) {
			msg := mustDecode(t, flop(tt.styp, "<FLID>5</FLID><FFID>CA-1</FFID>"+tt.body))
			got := map[string]flight.Command{}
			for _, c := range msg.Records[0].Cmds {
				if c.Tag != "FFID" {
					got[c.Tag] = c
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("commands (-want +got):\n%s", diff)
			}
			if !slices.IsSortedFunc(msg.Records[0].Cmds, func(a, b flight.Command) int {
				return flight.FieldOrder(a.Tag) - flight.FieldOrder(b.Tag)
			}) {
				t.Fatalf("commands out of field order: %+v", msg.Records[0].Cmds)
			}
		})
	}
}

func TestFlopMultipleRecordsAndIncrementSemantics(t *testing.T) {
	msg := mustDecode(t, flop("ESTT",
		"<FLID>1</FLID><ESTT>09SEP261020</ESTT>",
		"<FLID>2</FLID><ESTT>09SEP261030</ESTT><XTRA>1</XTRA>",
		"<FLID>1</FLID><ESTT>09SEP261025</ESTT>"))
	if len(msg.Records) != 3 || msg.Records[2].Index != 3 || msg.Records[2].FLID != 1 {
		t.Fatalf("records = %+v", msg.Records)
	}
	if c := msg.Records[0].For("GTDT"); c.Op != flight.OpUnchanged {
		t.Fatalf("absent field in FLOP = %s, want UNCHANGED", c.Op)
	}
	if msg.IgnoredTags["XTRA"] != 1 {
		t.Fatalf("ignored = %v", msg.IgnoredTags)
	}
}

// TestFlopRecordWithoutItsSubjectClearsIt: a FLOP of a subtype gives the
// AODB's current value of the subtype's field; a record that leaves the
// field out says the AODB has none (a STYP=TOBT carrying only FLID and
// FFID clears TOBT), while the other fields it carries stay increments.
func TestFlopRecordWithoutItsSubjectClearsIt(t *testing.T) {
	for _, tt := range []struct{ styp, body, other string }{
		{"GTDT", flopHead + "<ESTT>09SEP261020</ESTT>", "ESTT"},
		{"TOBT", "<FLID>121112312</FLID><FFID>CA-1</FFID>", "FFID"},
		{"FDIV", "<FLID>121112312</FLID><FFID>CA-1</FFID>", "FFID"},
		{"FFID", "<FLID>121112312</FLID><ALCD>CA</ALCD>", "ALCD"}, // the first field of all
	} {
		msg := mustDecode(t, flop(tt.styp, tt.body))
		rec := msg.Records[0]
		if c := cmdOf(t, rec, tt.styp); c.Op != flight.OpClear {
			t.Fatalf("%s without %s: %+v, want CLEAR", tt.styp, tt.styp, c)
		}
		if c := cmdOf(t, rec, tt.other); c.Op != flight.OpSet {
			t.Fatalf("%s: %s = %+v, want SET", tt.styp, tt.other, c)
		}
		if c := rec.For("CKDT"); c.Op != flight.OpUnchanged {
			t.Fatalf("%s: a field neither the subject nor carried = %s, want UNCHANGED", tt.styp, c.Op)
		}
	}
}

func TestFDEL(t *testing.T) {
	msg := mustDecode(t, flop("FDEL", "<FLID>15</FLID><FFID>CA-1</FFID>", "<FLID>0016</FLID>"))
	if msg.Kind != KindFDEL || len(msg.Records) != 0 {
		t.Fatalf("kind %s records %d", msg.Kind, len(msg.Records))
	}
	if diff := cmp.Diff([]flight.FLID{15, 16}, msg.Deletions); diff != "" {
		t.Fatal(diff)
	}
	tests := map[string]struct {
		body   string
		reason Reason
	}{
		"no FLID":     {"<FFID>x</FFID>", ReasonMissingField},
		"empty FLID":  {"<FLID/>", ReasonBadFLID},
		"two FLIDs":   {"<FLID>1</FLID><FLID>2</FLID>", ReasonDuplicateField},
		"nested FLID": {"<FLID><X>1</X></FLID>", ReasonBadStructure},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if e := mustReject(t, flop("FDEL", tt.body), Options{}); e.Reason != tt.reason {
				t.Fatalf("got %v, want %s", e, tt.reason)
			}
		})
	}
}
