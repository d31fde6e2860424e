package sis

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A decode through a scratch that earlier messages used — their nodes,
// groups and arena blocks — gives exactly what a decode with a new scratch
// gives, message or error, and leaves no node of the message behind in the
// scratch (the pool must not keep a message's input alive).
func TestDecodeThroughAUsedScratchIsAFreshDecode(t *testing.T) {
	var raws []string
	files := interfaceCorpus(t)
	more, err := filepath.Glob("testdata/dnld_*.xml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, string(b))
	}
	// Rejected messages too, cut mid-record and with a record element
	// repeated, after and before the ones that decode.
	for _, raw := range raws[:len(raws):len(raws)] {
		raws = append(raws, raw[:len(raw)*2/3], string(flop("ESTT", fltr("12345678", "<ESTT>09SEP260900</ESTT><ESTT>x</ESTT>"))))
	}
	opts := Options{Workers: 1}
	used := new(scratch)
	check := func(i int, raw string) {
		t.Helper()
		got, gotErr := decodeWith(raw, opts, used)
		want, wantErr := decodeWith(raw, opts, new(scratch))
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Fatalf("message %d: error %v through a used scratch, %v fresh", i, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("message %d decodes differently through a used scratch:\n got %+v\nwant %+v", i, got, want)
		}
		if len(used.nodes.blocks) == 0 || len(used.nodes.blocks) > scratchBlocks || used.nodes.block != 0 || used.nodes.used != 0 {
			t.Fatalf("message %d: the scratch keeps %d blocks at %d/%d", i, len(used.nodes.blocks), used.nodes.block, used.nodes.used)
		}
		for b, block := range used.nodes.blocks {
			for n := range block {
				if !reflect.ValueOf(block[n]).IsZero() {
					t.Fatalf("message %d: node %d of block %d is left in the scratch: %+v", i, n, b, block[n])
				}
			}
		}
		if used.dec.msg != nil || used.dec.scan != nil || used.scan.input != "" || used.scan.nodes.blocks != nil {
			t.Fatalf("message %d: the scratch's decoder or scanner keeps the message", i)
		}
		for _, a := range used.scan.attrBuf[:cap(used.scan.attrBuf)] {
			if a != (xml.Attr{}) {
				t.Fatalf("message %d: the scanner's buffer keeps attribute %+v", i, a)
			}
		}
		for _, name := range used.scan.open[:cap(used.scan.open)] {
			if name != "" {
				t.Fatalf("message %d: the scanner's buffer keeps element name %q", i, name)
			}
		}
		for pos, g := range used.groups {
			for _, n := range g[:cap(g)] {
				if n != nil {
					t.Fatalf("message %d: group %d keeps a node", i, pos)
				}
			}
		}
	}
	for i, raw := range raws {
		check(i, raw)
	}
	for i := len(raws) - 1; i >= 0; i-- { // the large ones first this time
		check(i, raws[i])
	}
}
