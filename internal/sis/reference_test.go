package sis

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// airline is an AIRL record as the interface defines it: codes, names,
// country, terminals per movement (attribute + text), alliances and
// subcompanies (repeating), domestic/international.
const airline = `<AIRL><ITOP>CA</ITOP><ICOP>CCA</ICOP><ONAM>AIR CHINA</ONAM><ONMC>中国国际航空</ONMC><CTRY>CHN</CTRY>
<TRML MVIN="A" FLIN="I">T3</TRML><TRML MVIN="D" FLIN="D">T3</TRML><OGRP>STAR ALLIANCE</OGRP>
<SUBC><CODE>001</CODE><NAME>Air China Cargo</NAME><NAMC>国货航</NAMC></SUBC><DORI>I</DORI></AIRL>`

func TestReferenceRecordRendersEveryElement(t *testing.T) {
	msg := mustDecode(t, envelope("AIRL", "DNLD", "<RECS>2</RECS>"+airline+
		`<AIRL><ICOP>CKK</ICOP><ONAM>CHINA CARGO</ONAM><TRML MVIN="" FLIN=""></TRML><DORI>I</DORI></AIRL>`))
	if msg.Kind != KindReference || msg.Recs != 2 {
		t.Fatalf("kind %s recs %d", msg.Kind, msg.Recs)
	}
	ref := msg.Reference
	if ref.Kind.Name != "airlines" || ref.Op != RefReplace || len(ref.Records) != 2 {
		t.Fatalf("reference = %+v", ref)
	}
	want := map[string]any{
		"ITOP": "CA", "ICOP": "CCA", "ONAM": "AIR CHINA", "ONMC": "中国国际航空", "CTRY": "CHN", "DORI": "I",
		"TRML": []any{map[string]any{"MVIN": "A", "FLIN": "I", "TEXT": "T3"}, map[string]any{"MVIN": "D", "FLIN": "D", "TEXT": "T3"}},
		"OGRP": []any{"STAR ALLIANCE"},
		"SUBC": []any{map[string]any{"CODE": "001", "NAME": "Air China Cargo", "NAMC": "国货航"}},
	}
	var got map[string]any
	if err := json.Unmarshal(ref.Records[0].Doc, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("doc (-want +got):\n%s", diff)
	}
	if ref.Records[0].Key != "CA" || ref.Records[0].Index != 1 {
		t.Fatalf("first record %+v", ref.Records[0])
	}
	// An airline without an IATA code is keyed by its ICAO code (3
	// letters: no IATA code collides with it); a listed element it carries
	// once is an array all the same.
	second := ref.Records[1]
	if second.Key != "CKK" || !strings.Contains(string(second.Doc), `"TRML":[{"FLIN":"","MVIN":""}]`) {
		t.Fatalf("second record %s %s", second.Key, second.Doc)
	}
}

func TestReferenceOperations(t *testing.T) {
	for styp, op := range map[string]ReferenceOp{"DNLD": RefReplace, "RESP": RefReplace, "ADD": RefUpsert, "UPD": RefUpsert,
		"DEL": RefDelete, "upd": RefUpsert} {
		msg := mustDecode(t, envelope("GLST", styp, "<GLST><GCOD>B7</GCOD></GLST>"))
		if msg.Reference.Op != op || msg.Reference.Records[0].Key != "B7" {
			t.Errorf("%s: %+v", styp, msg.Reference)
		}
	}
	// A DEL may carry the key alone (the interface's samples do).
	msg := mustDecode(t, envelope("ARPT", "DEL", "<RECS>1</RECS><ARPT><ITCD>PEK</ITCD></ARPT>"))
	if r := msg.Reference.Records[0]; r.Key != "PEK" || string(r.Doc) != `{"ITCD":"PEK"}` {
		t.Fatalf("DEL record %+v", r)
	}
	// An empty list is a list: the AODB has no such records.
	msg = mustDecode(t, envelope("VIPL", "DNLD", "<RECS>0</RECS>"))
	if msg.Reference.Op != RefReplace || len(msg.Reference.Records) != 0 {
		t.Fatalf("empty DNLD %+v", msg.Reference)
	}
}

func TestReferenceDuplicateKeyLaterWins(t *testing.T) {
	msg := mustDecode(t, envelope("GLST", "DNLD", "<GLST><GCOD>B7</GCOD><GTNM>old</GTNM></GLST><GLST><GCOD>B8</GCOD></GLST>"+
		"<GLST><GCOD> B7 </GCOD><GTNM>new</GTNM></GLST>"))
	ref := msg.Reference
	if len(ref.Records) != 2 || ref.DuplicateKeys != 1 || ref.Records[0].Key != "B7" || ref.Records[0].Index != 3 ||
		!strings.Contains(string(ref.Records[0].Doc), `"new"`) {
		t.Fatalf("reference %+v", ref)
	}
}

func TestReferenceRefusals(t *testing.T) {
	tests := []struct {
		name      string
		typ, styp string
		body      string
		reason    Reason
		path      string
	}{
		{"no key", "GLST", "UPD", "<GLST><GTNM>x</GTNM></GLST>", ReasonMissingField, "MSG/GLST[1]/GCOD"},
		{"blank key", "AIRL", "ADD", "<AIRL><ITOP> </ITOP><ICOP/></AIRL>", ReasonMissingField, "MSG/AIRL[1]/ITOP"},
		{"key twice", "GLST", "UPD", "<GLST><GCOD>1</GCOD><GCOD>2</GCOD></GLST>", ReasonDuplicateField, "MSG/GLST[1]/GCOD[2]"},
		{"key with children", "GLST", "UPD", "<GLST><GCOD><X/></GCOD></GLST>", ReasonBadStructure, "MSG/GLST[1]/GCOD"},
		{"RECS mismatch", "GLST", "DNLD", "<RECS>2</RECS><GLST><GCOD>1</GCOD></GLST>", ReasonRecsMismatch, "MSG/RECS"},
		{"RECS not a number", "GLST", "DNLD", "<RECS>x</RECS>", ReasonBadRecs, "MSG/RECS"},
		{"RECS too large", "GLST", "DNLD", "<RECS>1000000</RECS>", ReasonRecsOutOfRange, "MSG/RECS"},
		{"RECS twice", "GLST", "DNLD", "<RECS>0</RECS><RECS>0</RECS>", ReasonDuplicateField, "MSG/RECS[2]"},
		{"an update of nothing", "GLST", "UPD", "", ReasonMissingBody, "MSG/GLST"},
		{"text in a record", "GLST", "UPD", "<GLST>B7<GCOD>1</GCOD></GLST>", ReasonBadStructure, "MSG/GLST[1]"},
		{"unknown subtype", "GLST", "FDEL", "<GLST><GCOD>1</GCOD></GLST>", ReasonUnknownStyp, "MSG/META/STYP"},
		{"unknown FLOP subtype", "FLOP", "WEEK", "<FLOP><FLID>1</FLID></FLOP>", ReasonUnknownStyp, "MSG/META/STYP"},
		{"empty RECS", "GLST", "DNLD", "<RECS></RECS>", ReasonBadRecs, "MSG/RECS"},
		{"RECS with children", "GLST", "DNLD", "<RECS><N>0</N></RECS>", ReasonBadStructure, "MSG/RECS"},
		{"RECS not closed", "GLST", "DNLD", "<RECS>1</RECX>", ReasonMalformedXML, "MSG/RECS"},
		{"RECS at its bound, records missing", "GLST", "DNLD", "<RECS>0100000</RECS>", ReasonRecsMismatch, "MSG/RECS"},
		{"RECS one over its bound", "GLST", "DNLD", "<RECS>100001</RECS>", ReasonRecsOutOfRange, "MSG/RECS"},
		{"RECS wraps a uint64 to 1", "GLST", "DNLD", "<RECS>18446744073709551617</RECS><GLST><GCOD>1</GCOD></GLST>", ReasonRecsOutOfRange, "MSG/RECS"},
		{"RECS 0, then a record", "GLST", "DNLD", "<RECS>0</RECS><GLST><GCOD>1</GCOD></GLST>", ReasonRecsMismatch, "MSG/RECS"},
		{"malformed record", "GLST", "UPD", "<GLST><GCOD>1</GCOX></GLST>", ReasonMalformedXML, "MSG/GLST/GCOD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustReject(t, envelope(tt.typ, tt.styp, tt.body), Options{})
			if e.Reason != tt.reason || e.Path != tt.path {
				t.Fatalf("got %v, want %s at %s", e, tt.reason, tt.path)
			}
		})
	}
}

// TestEveryReferenceKindDecodes: every type of the catalogue decodes a
// record carrying its key, under its TYPE and by its list name.
// TestReferenceRecordLimits: a reference-data message holds at most
// MaxReferenceRecords records (here bounded at 3); its RECS may carry leading zeros; the value
// limit holds inside its records.
func TestReferenceRecordLimits(t *testing.T) {
	record := "<GLST><GCOD>B7</GCOD></GLST>"
	msg := mustDecode(t, envelope("GLST", "DNLD", "<RECS>0000000000002</RECS>"+record+record))
	if msg.Recs != 2 || len(msg.Reference.Records) != 1 || msg.Reference.DuplicateKeys != 1 {
		t.Fatalf("RECS with leading zeros: recs %d %+v", msg.Recs, msg.Reference)
	}
	old := maxReferenceRecords
	maxReferenceRecords = 3
	t.Cleanup(func() { maxReferenceRecords = old })
	if _, err := Decode(envelope("GLST", "DNLD", strings.Repeat(record, 3)), Options{}); err != nil {
		t.Fatalf("3 records, at the bound: %v", err)
	}
	e := mustReject(t, envelope("GLST", "DNLD", strings.Repeat(record, 4)), Options{})
	if want := "sis: TOO_MANY_RECORDS at MSG/GLST[4]: more than 3 <GLST> records"; e.Error() != want {
		t.Fatalf("got %v, want %s", e, want)
	}
	e = mustReject(t, envelope("GLST", "UPD", "<GLST><GCOD>B7</GCOD><GTNM>"+strings.Repeat("x", 17)+"</GTNM></GLST>"), Options{MaxValueBytes: 16})
	if e.Reason != ReasonValueTooLong || e.Path != "MSG/GLST[1]/GTNM" {
		t.Fatalf("got %v at %q, want VALUE_TOO_LONG at MSG/GLST[1]/GTNM", e, e.Path)
	}
	// A namespace declaration is no data of the record.
	msg = mustDecode(t, envelope("GLST", "UPD", `<GLST xmlns:x="urn:x" x:note="n"><GCOD>B7</GCOD></GLST>`))
	if doc := string(msg.Reference.Records[0].Doc); doc != `{"GCOD":"B7","x:note":"n"}` {
		t.Fatalf("doc %s", doc)
	}
}

func TestEveryReferenceKindDecodes(t *testing.T) {
	kinds := ReferenceKinds()
	if len(kinds) != 23 {
		t.Fatalf("%d reference kinds, want the interface's 23", len(kinds))
	}
	names := map[string]bool{}
	for _, k := range kinds {
		if names[k.Name] {
			t.Fatalf("two kinds named %s", k.Name)
		}
		names[k.Name] = true
		for _, by := range []string{k.Type, k.Name, strings.ToLower(k.Type)} {
			if got, ok := LookupReferenceKind(by); !ok || got.Type != k.Type {
				t.Fatalf("lookup %q = %+v %v", by, got, ok)
			}
		}
		msg := mustDecode(t, envelope(k.Type, "UPD", "<"+k.Type+"><"+k.Key[0]+">K1</"+k.Key[0]+"></"+k.Type+">"))
		if msg.Reference.Kind.Type != k.Type || msg.Reference.Records[0].Key != "K1" {
			t.Fatalf("%s: %+v", k.Type, msg.Reference)
		}
	}
	if _, ok := LookupReferenceKind("FLOP"); ok {
		t.Fatal("FLOP is no reference kind")
	}
}

func TestNotAppliedTypesEndAtOnce(t *testing.T) {
	msg := mustDecode(t, envelope("SCHS", "DNLD", `<SCHS><SNAM>W26</SNAM><APCD>PEK</APCD><RECS>1</RECS>
<FLTR><FLID>1</FLID><SODT>25OCT260800</SODT></FLTR></SCHS>`))
	if msg.Kind != KindNotApplied || msg.NotApplied == nil || !strings.Contains(msg.NotApplied.Reason, "seasonal schedule") {
		t.Fatalf("SCHS: %+v", msg)
	}
	if len(msg.ContentDigest) == 0 {
		t.Fatal("no content digest: a re-sent copy could not be told")
	}
	// Still XML within the limits, with one META.
	if e := mustReject(t, envelope("SCHS", "DNLD", "<SCHS><FLTR></SCHS>"), Options{}); e.Reason != ReasonMalformedXML {
		t.Fatalf("malformed SCHS: %v", e)
	}
	if e := mustReject(t, envelope("SCHS", "DNLD", "<META/>"), Options{}); e.Reason != ReasonDuplicateField || e.Path != "MSG/META[2]" {
		t.Fatalf("SCHS with a second META: %v", e)
	}
	for _, n := range NotAppliedTypes() {
		if msg := mustDecode(t, envelope(n.Type, "NONE", "")); msg.Kind != KindNotApplied || msg.NotApplied.Type != n.Type {
			t.Fatalf("%s: %+v", n.Type, msg)
		}
	}
}
