package sis

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Options.SkipRefusedRecords (a skip-conflicts replay)
// leaves out a snapshot record refused for its own content when it carries
// a readable FLID, naming it in Message.Refused; what refuses the whole
// message still does, and RECS counts the refused records too.
func TestSkipRefusedRecords(t *testing.T) {
	bad := fltr("4711", "<CNCL>31FEB261000</CNCL>")
	tests := []struct {
		name        string
		raw         []byte
		wantRecords []string // FLIDs kept
		wantRefused []string // "index FLID reason"
		wantErr     string   // the message's refusal, when it is refused
	}{
		{"bad time left out", dnld(fltr("1", ""), bad, fltr("2", "")), []string{"1", "2"},
			[]string{"2 4711 BAD_TIME"}, ""},
		{"FLID after the faulty field", dnld(fltr("1", ""), "<FLTR><CKDT CKNO=\"A\"><CHKC>01</CHKC></CKDT><SODT>09SEP261015</SODT><FLID>0815</FLID></FLTR>"),
			[]string{"1"}, []string{"2 815 BAD_SEQUENCE"}, ""},
		{"missing SODT left out", dnld("<FLTR><FLID>12</FLID><FLNO>CA1</FLNO></FLTR>", fltr("3", "")), []string{"3"},
			[]string{"1 12 MISSING_FIELD"}, ""},
		{"every record refused", dnld(bad), nil, []string{"1 4711 BAD_TIME"}, ""},
		{"RECS counts the refused records", envelope("SCHD", "DNLD", "<SCHD><RECS>2</RECS>"+fltr("1", "")+bad+fltr("2", "")+"</SCHD>"),
			nil, nil, "RECS_MISMATCH"},
		{"a bad FLID is no readable FLID", dnld(fltr("1", ""), fltr("12AB", "")), nil, nil, "BAD_FLID"},
		{"a duplicate FLID still refuses the message", dnld(fltr("7", ""), fltr("007", "")), nil, nil, "DUPLICATE_FLID"},
		{"a refused record's FLID again is a duplicate", dnld(bad, fltr("4711", "")), nil, nil, "DUPLICATE_FLID"},
		{"a kept record's FLID again, refused, is a duplicate", dnld(fltr("4711", ""), bad), nil, nil, "DUPLICATE_FLID at MSG/SCHD/FLTR[2]/FLID (FLID 4711): FLID 4711 already in FLTR[1]"},
		{"a limit in a record refuses the message", dnld(fltr("1", ""), fltr("2", `<GTDT GTNO="1"/><GTDT GTNO="2"/>`)), nil, nil, "TOO_MANY_ITEMS at MSG/SCHD/FLTR[2]/GTDT[2] (FLID 2)"},
		{"an increment is never cut", envelope("SCHD", "ADFT", "<SCHD><RECS>1</RECS>"+bad+"</SCHD>"), nil, nil, "BAD_TIME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := Decode(tt.raw, Options{SkipRefusedRecords: true, Workers: 1, MaxCollectionItems: 1})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode = %v, want a refusal %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			var kept, refused []string
			for _, r := range msg.Records {
				kept = append(kept, r.FLID.String())
			}
			for _, r := range msg.Refused {
				refused = append(refused, fmt.Sprintf("%d %s %s", r.Index, r.FLID, r.Err.Reason))
			}
			if !slices.Equal(kept, tt.wantRecords) || !slices.Equal(refused, tt.wantRefused) {
				t.Fatalf("kept %v refused %v, want %v and %v", kept, refused, tt.wantRecords, tt.wantRefused)
			}
		})
	}
	// Without the option the first case refuses the whole message, as ever.
	if _, err := Decode(dnld(fltr("1", ""), bad), Options{}); err == nil || !strings.Contains(err.Error(), "BAD_TIME at MSG/SCHD/FLTR[2]/CNCL (FLID 4711)") {
		t.Fatalf("without SkipRefusedRecords: %v, want the message refused naming FLTR[2] and FLID 4711", err)
	}
}

// A message large enough for the parallel path decodes the same with the
// option: sequentially, the refused record left out.
func TestSkipRefusedRecordsLargeMessage(t *testing.T) {
	var recs []string
	for i := 1; i <= 400; i++ {
		extra := ""
		if i == 250 {
			extra = "<CNCL>31FEB261000</CNCL>"
		}
		recs = append(recs, fltr(fmt.Sprint(i), extra))
	}
	msg, err := Decode(dnld(recs...), Options{SkipRefusedRecords: true, Workers: 4, DeferRecordsFrom: 1})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(msg.Records) != 399 || len(msg.Refused) != 1 || msg.Refused[0].Index != 250 || msg.Deferred() {
		t.Fatalf("%d records, refused %+v, deferred %v: want 399, FLTR[250], not deferred", len(msg.Records), msg.Refused, msg.Deferred())
	}
	// Nor is one that refuses no record deferred: its records keep their
	// commands.
	recs[249] = fltr("250", "")
	msg, err = Decode(dnld(recs...), Options{SkipRefusedRecords: true, Workers: 4, DeferRecordsFrom: 1})
	if err != nil || len(msg.Records) != 400 || msg.Deferred() || len(msg.Records[399].Cmds) == 0 {
		t.Fatalf("no refused record: %v, deferred %v", err, msg != nil && msg.Deferred())
	}
}
