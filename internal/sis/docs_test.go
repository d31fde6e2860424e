package sis

import (
	"os"
	"strings"
	"testing"
)

// typeRows renders the rows docs/processing-rules.md holds for the message
// types: every FLOP subtype with its subject fields, every reference-data
// type with its list name, key and repeating children, every type not
// applied. TestProcessingRulesListEveryType holds the document to them.
func typeRows() []string {
	var rows []string
	code := func(tags []string, sep string) string {
		out := make([]string, len(tags))
		for i, t := range tags {
			out[i] = "`" + t + "`"
		}
		return strings.Join(out, sep)
	}
	for _, s := range FlopSubtypes() {
		fields := code(s.Fields, " ")
		if s.Delete {
			fields = "— (deletes the flight by `FLID`)"
		}
		rows = append(rows, "| `"+s.Styp+"` | "+fields+" |")
	}
	for _, k := range ReferenceKinds() {
		lists := code(k.Lists, " ")
		if lists == "" {
			lists = "—"
		}
		rows = append(rows, "| `"+k.Type+"` | `"+k.Name+"` | "+code(k.Key, ", else ")+" | "+lists+" | "+k.Title+" |")
	}
	for _, n := range NotAppliedTypes() {
		rows = append(rows, "| `"+n.Type+"` | "+n.Reason+" |")
	}
	return rows
}

func TestProcessingRulesListEveryType(t *testing.T) {
	doc, err := os.ReadFile("../../docs/processing-rules.md")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, row := range typeRows() {
		if !strings.Contains(string(doc), row+"\n") {
			missing = append(missing, row)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("docs/processing-rules.md lacks %d rows of the type tables (or says them otherwise):\n%s", len(missing), strings.Join(missing, "\n"))
	}
}
