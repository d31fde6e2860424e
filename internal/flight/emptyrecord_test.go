package flight

import (
	"bytes"
	"testing"
)

// TestEmptyRecordClearsAndNeverPublishesEmptyObjects: for every text and
// grouped record, an empty tag decoded as Clear (SIS §1.6.3) removes the
// field in an increment and in a full snapshot, and the canonical document
// (KAFKA_SCHD, export, read API) has no key for it — never [{}] — even when a
// state stored before this rule still holds empty items.
func TestEmptyRecordClearsAndNeverPublishesEmptyObjects(t *testing.T) {
	for _, tag := range []string{"SRVT", "VIPF", "MAFL", "PSHT", "TIPT", "PORT"} {
		for _, full := range []bool{false, true} {
			name := tag + "/increment"
			if full {
				name = tag + "/snapshot"
			}
			t.Run(name, func(t *testing.T) {
				cur := base()
				cur.Lists[tag] = []Item{{TextKey: "old"}}
				next, changed, err := Apply(cur, Commands{FLID: cur.FLID, Full: full, Cmds: []Command{{Tag: tag, Op: OpClear}}})
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := next.Lists[tag]; ok {
					t.Fatalf("%s still in the state: %v", tag, next.Lists[tag])
				}
				found := false
				for _, c := range changed {
					found = found || c == tag
				}
				if !found {
					t.Fatalf("changed = %v, want it to name %s", changed, tag)
				}
				assertNoKey(t, next, tag)
			})
		}
		t.Run(tag+"/legacy empty items", func(t *testing.T) {
			s := base()
			s.Lists[tag] = []Item{{}, {}}
			assertNoKey(t, s, tag)
			s.Lists[tag] = []Item{{}, {TextKey: "x"}}
			doc, err := CanonicalJSON(s)
			if err != nil {
				t.Fatal(err)
			}
			if want := []byte(`"` + tag + `":[{"TEXT":"x"}]`); !bytes.Contains(doc, want) {
				t.Fatalf("canonical %s, want it to contain %s", doc, want)
			}
		})
	}
}

func assertNoKey(t *testing.T, s State, tag string) {
	t.Helper()
	doc, err := CanonicalJSON(s)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(doc, []byte(`"`+tag+`"`)) || bytes.Contains(doc, []byte(`{}`)) {
		t.Fatalf("canonical document shows %s or an empty object: %s", tag, doc)
	}
}
