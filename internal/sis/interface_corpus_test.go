package sis

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The interface corpus (testdata/interface, one message per file) holds at
// least one message of every type and FLOP subtype the interface defines,
// written from the interface's definitions (the record children of each
// reference type, each subtype's fields), not from this package's tables:
// TestInterfaceCorpusCoversTheInterface checks the tables against it, and
// internal/cli's TestInterfaceCorpusDrains drains it end to end.

// interfaceCorpus returns the corpus files in order.
func interfaceCorpus(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/interface/*.xml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no interface corpus: %v", err)
	}
	slices.Sort(files)
	return files
}

func TestInterfaceCorpusCoversTheInterface(t *testing.T) {
	seen := map[string]map[string]bool{} // TYPE → STYPs
	for _, f := range interfaceCorpus(t) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := Decode(raw, Options{})
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if msg.Kind == KindUnknown {
			t.Errorf("%s: kind %s", filepath.Base(f), msg.Kind)
		}
		if seen[msg.Meta.Type] == nil {
			seen[msg.Meta.Type] = map[string]bool{}
		}
		seen[msg.Meta.Type][msg.Meta.Styp] = true
	}
	for _, s := range FlopSubtypes() {
		if !seen[TypeFLOP][s.Styp] {
			t.Errorf("no FLOP %s in the corpus", s.Styp)
		}
	}
	for _, styp := range []string{StypDNLD, StypRESP, StypADFT} {
		if !seen[TypeSCHD][styp] {
			t.Errorf("no SCHD %s in the corpus", styp)
		}
	}
	ops := map[string]bool{}
	for _, k := range ReferenceKinds() {
		if !seen[k.Type]["DNLD"] {
			t.Errorf("no whole list (DNLD) of %s in the corpus", k.Type)
		}
		for styp := range seen[k.Type] {
			ops[styp] = true
		}
	}
	for styp := range referenceOps {
		if !ops[styp] {
			t.Errorf("no reference-data %s in the corpus", styp)
		}
	}
	for _, n := range NotAppliedTypes() {
		if len(seen[n.Type]) == 0 {
			t.Errorf("no %s in the corpus", n.Type)
		}
	}
	for typ := range seen {
		if !KnownType(typ) {
			t.Errorf("the corpus holds a type the interface does not define: %s", typ)
		}
	}
}
