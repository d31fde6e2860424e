package sis

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/testsupport/golden"
)

// freshState applies a snapshot record's commands to an empty flight, enough
// to show the canonical document a full snapshot produces. (A minimal
// stand-in written before flight.Apply, the real merge engine, existed.)
func freshState(rec Record) flight.State {
	s := flight.NewState(rec.FLID)
	s.OperationDay = rec.OperationDay
	s.StateVersion = int64(rec.Index)
	for _, c := range rec.Cmds {
		switch c.Op {
		case flight.OpSet:
			if c.Anomaly != nil {
				s.Anomalies[c.Tag] = c.Anomaly
			} else {
				s.Scalars[c.Tag] = c.Value
			}
		case flight.OpReplace:
			s.Lists[c.Tag] = c.Items
		}
	}
	return s
}

// TestGoldenDNLD decodes two realistic full-day DNLD messages (turnaround and
// codeshare links, every collection kind, anomalies and records) and pins
// both the decoded commands and the canonical JSON of each flight.
func TestGoldenDNLD(t *testing.T) {
	files, err := filepath.Glob("testdata/dnld_*.xml")
	if err != nil || len(files) < 2 {
		t.Fatalf("golden inputs: %v %v", files, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".xml")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			msg := mustDecode(t, raw)
			if len(msg.Records) < 3 {
				t.Fatalf("%d records, want at least 3", len(msg.Records))
			}
			assertEveryCollectionKind(t, msg)
			decoded, err := json.MarshalIndent(msg, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Equal(t, name+".commands.golden.json", append(decoded, '\n'))

			var lines bytes.Buffer
			for _, rec := range msg.Records {
				doc, err := flight.CanonicalJSON(freshState(rec))
				if err != nil {
					t.Fatal(err)
				}
				lines.Write(doc)
				lines.WriteByte('\n')
			}
			golden.Equal(t, name+".canonical.golden.jsonl", lines.Bytes())
		})
	}
}

func assertEveryCollectionKind(t *testing.T, msg *Message) {
	t.Helper()
	seen := map[string]bool{}
	for _, rec := range msg.Records {
		for _, c := range rec.Cmds {
			seen[c.Tag] = true
		}
	}
	for _, f := range flight.Fields() {
		if f.Kind == flight.KindCollection && !seen[f.Tag] {
			t.Errorf("golden message lacks collection %s", f.Tag)
		}
	}
	for _, tag := range []string{"TAOP", "TAFL", "TAID", "CSOP", "CSFT", "MAID", "MAFL"} {
		if !seen[tag] {
			t.Errorf("golden message lacks turnaround/codeshare field %s", tag)
		}
	}
}
