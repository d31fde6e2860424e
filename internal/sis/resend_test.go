package sis

import (
	"bytes"
	"encoding/xml"
	"strconv"
	"strings"
	"testing"
)

// A re-sent copy whose only change is its send time has the same content
// digest (processing rules R10.4); anything else in META or the body
// makes another payload.
func TestContentDigestLeavesOutTheSendTime(t *testing.T) {
	base := string(flop("GTDT", `<FLID>7</FLID><GTDT GTNO="1"><GATE>C1</GATE></GTDT>`))
	records := make([]string, 300)
	for i := range records {
		records[i] = fltr(strconv.Itoa(1000+i), `<GTDT GTNO="1"><GATE>A1</GATE></GTDT>`)
	}
	full := string(dnld(records...))
	restamp := func(s, with string) string { return strings.Replace(s, "<DDTM>20260909101500</DDTM>", with, 1) }
	cases := []struct {
		name       string
		orig, copy string
		same       bool
	}{
		{"identical", base, base, true},
		{"new DDTM", base, restamp(base, "<DDTM>20260909113000</DDTM>"), true},
		{"DTTM instead of DDTM", base, restamp(base, "<DTTM>20260909113000123</DTTM>"), true},
		{"13-digit send time with spaces", base, restamp(base, "<DDTM> 1788924600000 </DDTM>"), true},
		{"send time written later in META", base, strings.Replace(restamp(base, ""), "<STYP>", "<DDTM>20260909113000</DDTM><STYP>", 1), true},
		{"re-stamped full-day snapshot (parallel decode)", full, restamp(full, "<DTTM>20260910000000</DTTM>"), true},
		{"other gate", base, strings.Replace(base, "C1", "C9", 1), false},
		{"other receiver", base, strings.Replace(base, "<RCVR>RMS</RCVR>", "<RCVR>FIDS</RCVR>", 1), false},
		{"unmapped META field added", base, strings.Replace(base, "<TYPE>", "<MGID>9</MGID><TYPE>", 1), false},
		{"send time text elsewhere", base, strings.Replace(base, "<GATE>C1</GATE>", "<GATE>C1</GATE><DDTM>1</DDTM>", 1), false},
	}
	defer func(n int) { parallelMinBytes = n }(parallelMinBytes)
	parallelMinBytes = len(full) / 2 // the snapshot is cut in chunks and decoded in parallel
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := mustDecode(t, []byte(c.orig)), mustDecode(t, []byte(c.copy))
			if len(a.ContentDigest) != 32 {
				t.Fatalf("digest %x", a.ContentDigest)
			}
			if got := bytes.Equal(a.ContentDigest, b.ContentDigest); got != c.same {
				t.Fatalf("same digest = %v, want %v", got, c.same)
			}
		})
	}
}

// referenceDigest is the content digest with the cuts found independently
// of the decoder's tree: a second encoding/xml pass over the whole text
// finds the ResendFields children of MSG's first child (META), tags
// included.
func referenceDigest(t *testing.T, input string) []byte {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(input))
	dec.Strict = true
	var cuts [][2]int
	depth, start, metaDone := 0, -1, false
	for !metaDone {
		before := int(dec.InputOffset())
		tok, err := dec.RawToken()
		if err != nil {
			t.Fatalf("reference pass: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 3 && isResendField(qualified(tk.Name)) {
				start = before
			}
		case xml.EndElement:
			if depth == 3 && start >= 0 {
				cuts = append(cuts, [2]int{start, int(dec.InputOffset())})
				start = -1
			}
			if depth == 2 {
				metaDone = true
			}
			depth--
		}
	}
	return contentDigest(input, cuts)
}

// The decoder takes the send time's ranges from the tree it read META
// into (no second parse); the digest must be exactly the one a separate
// pass computes, whatever META's markup looks like.
func TestContentDigestMatchesASeparatePass(t *testing.T) {
	base := string(flop("GTDT", `<FLID>7</FLID><GTDT GTNO="1"><GATE>C1</GATE></GTDT>`))
	const ddtm = "<DDTM>20260909101500</DDTM>"
	if !strings.Contains(base, ddtm) {
		t.Fatalf("the envelope changed: %s", base)
	}
	metas := []string{
		ddtm,
		"<DTTM>20260909101500123</DTTM>",
		"<DDTM a=\"x>y\" b='/>'>20260909101500</DDTM>",
		"<!-- <DDTM>0</DDTM> --><DDTM>20260909101500</DDTM>",
		"<DDTM><![CDATA[20260909101500]]></DDTM><?pi <DTTM/> ?>",
		"<DDTM>2026090910<!-- cut -->1500</DDTM>",
		"<DDTM>20260909101500</DDTM>\n\t<X><DDTM>nested, kept</DDTM></X>",
		"<MGID/><DDTM>20260909101500</DDTM><APOT a=\"/\"/>",
		"<ns:DDTM xmlns:ns=\"u\">1</ns:DDTM><DDTM>20260909101500</DDTM>",
	}
	for i, m := range metas {
		input := strings.Replace(base, ddtm, m, 1)
		msg, err := Decode([]byte(input), Options{})
		if err != nil {
			t.Fatalf("case %d: %v\n%s", i, err, input)
		}
		if want := referenceDigest(t, input); !bytes.Equal(msg.ContentDigest, want) {
			t.Errorf("case %d: digest %x, a separate pass gives %x\n%s", i, msg.ContentDigest, want, m)
		}
	}
	records := make([]string, 300)
	for i := range records {
		records[i] = fltr(strconv.Itoa(1000+i), `<GTDT GTNO="1"><GATE>A1</GATE></GTDT>`)
	}
	defer func(n int) { parallelMinBytes = n }(parallelMinBytes)
	parallelMinBytes = 1000 // cut in chunks and decoded in parallel
	full := strings.Replace(string(dnld(records...)), ddtm, "<!--x--><DTTM>20260910000000</DTTM>", 1)
	if msg := mustDecode(t, []byte(full)); !bytes.Equal(msg.ContentDigest, referenceDigest(t, full)) {
		t.Errorf("parallel decode: digest differs from a separate pass")
	}
}
