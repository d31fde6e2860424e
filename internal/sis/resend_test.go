package sis

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// A re-sent copy whose only change is its send time has the same content
// digest (SPEC §2.4, seed 001 §4.1); anything else in META or the body
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
