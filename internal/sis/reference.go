package sis

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
)

// ReferenceOp is what a reference-data message does to its list.
type ReferenceOp string

// Reference-data operations, from the message's STYP.
const (
	// RefReplace (DNLD, and RESP: the answer to an RQRD) is the whole list:
	// its records are upserted and every stored record of the type it does
	// not carry is deleted.
	RefReplace ReferenceOp = "REPLACE"
	// RefUpsert (ADD, UPD) inserts or updates each record by its key (the
	// AODB's own consumer treats ADD and UPD alike: an ADD of a known key
	// updates it, an UPD of an unknown one inserts it).
	RefUpsert ReferenceOp = "UPSERT"
	// RefDelete (DEL) deletes each record by its key; a key not stored is
	// no error. A DEL record may carry its key alone.
	RefDelete ReferenceOp = "DELETE"
)

// referenceOps maps a reference-data STYP to its operation.
var referenceOps = map[string]ReferenceOp{
	"DNLD": RefReplace, "RESP": RefReplace,
	"ADD": RefUpsert, "UPD": RefUpsert,
	"DEL": RefDelete,
}

// MaxReferenceRecords bounds the records of one reference-data message
// (and its RECS): a hub's registration list is tens of thousands of
// aircraft; the message's size and element limits bound it too.
const MaxReferenceRecords = 100_000

// maxReferenceRecords is the bound referenceBody applies: a variable so
// that tests reach it with a few records.
var maxReferenceRecords = MaxReferenceRecords

// Reference is a decoded reference-data message: the operation on the
// type's list and its records in input order.
type Reference struct {
	Kind ReferenceKind `json:"kind"`
	Op   ReferenceOp   `json:"op"`
	// Records are the message's records, one per key: when a message
	// carries a key twice the later record wins and DuplicateKeys counts
	// the earlier ones.
	Records       []ReferenceRecord `json:"records"`
	DuplicateKeys int               `json:"duplicate_keys,omitempty"`
}

// ReferenceRecord is one reference-data record: its key and the whole
// record as a JSON object (Doc).
type ReferenceRecord struct {
	// Index is the record's 1-based position in the message.
	Index int    `json:"index"`
	Key   string `json:"key"`
	// Doc renders every child element and attribute of the record, nothing
	// dropped: an element with text only is a string; one with attributes
	// or children an object of them, its text under "TEXT"; an element the
	// type lists as repeating (ReferenceKind.Lists), or one that repeats, an
	// array. Keys are sorted (encoding/json), so one record has one Doc.
	Doc json.RawMessage `json:"doc"`
}

// referenceBody decodes the records of a reference-data message: elements
// named after the TYPE directly under MSG (the interface does not wrap
// them), and an optional RECS, which must then count them.
func (d *decoder) referenceBody(kind ReferenceKind) error {
	ref := &Reference{Kind: kind, Op: referenceOps[upper(d.msg.Meta.Styp)]}
	d.msg.Reference = ref
	recs, recsPath := -1, ""
	byKey := map[string]int{}
	count := 0
	err := d.msgChildren(func(t xml.StartElement) error {
		switch qualified(t.Name) {
		case kind.Type:
			count++
			path := fmt.Sprintf("MSG/%s[%d]", kind.Type, count)
			if count > maxReferenceRecords {
				return newError(ReasonTooManyRecords, path, "more than %d <%s> records", maxReferenceRecords, kind.Type)
			}
			d.scan.resetTree()
			n, err := d.scan.readTree(t, path)
			if err != nil {
				return err
			}
			rec, err := d.referenceRecord(kind, n, path, count)
			if err != nil {
				return err
			}
			if at, ok := byKey[rec.Key]; ok {
				ref.Records[at] = rec
				ref.DuplicateKeys++
				return nil
			}
			byKey[rec.Key] = len(ref.Records)
			ref.Records = append(ref.Records, rec)
			return nil
		case "RECS":
			if recsPath != "" {
				return newError(ReasonDuplicateField, "MSG/RECS[2]", "RECS occurs twice")
			}
			recsPath = "MSG/RECS"
			d.scan.resetTree()
			n, err := d.scan.readTree(t, recsPath)
			if err != nil {
				return err
			}
			if n.hasChildren() {
				return newError(ReasonBadStructure, recsPath, "<RECS> holds child elements")
			}
			recs, err = parseRecs(n.text, recsPath, MaxReferenceRecords)
			return err
		case "META":
			return newError(ReasonDuplicateField, "MSG/META[2]", "<META> occurs twice")
		default:
			return d.ignoreElement(t)
		}
	})
	if err != nil {
		return err
	}
	d.msg.Recs = recs
	if recs >= 0 && recs != count {
		return newError(ReasonRecsMismatch, recsPath, "RECS %d but %d <%s> records", recs, count, kind.Type)
	}
	if count == 0 && ref.Op != RefReplace {
		// An empty list is a list (DNLD: the AODB has none); an ADD, UPD or
		// DEL of nothing is a message without its body.
		return newError(ReasonMissingBody, "MSG/"+kind.Type, "%s %s message without a <%s> record", kind.Type, d.msg.Meta.Styp, kind.Type)
	}
	return nil
}

// referenceRecord renders one record and finds its key: the first of
// kind.Key the record carries with a non-blank value.
func (d *decoder) referenceRecord(kind ReferenceKind, n *node, path string, index int) (ReferenceRecord, error) {
	if !isBlank(n.text) {
		return ReferenceRecord{}, newError(ReasonBadStructure, path, "text directly inside <%s>", kind.Type)
	}
	key := ""
	for _, tag := range kind.Key {
		var found *node
		for c := n.first; c != nil; c = c.next {
			if c.name != tag {
				continue
			}
			if found != nil {
				return ReferenceRecord{}, newError(ReasonDuplicateField, path+"/"+tag+"[2]", "%s, the key of %s, occurs twice", tag, kind.Name)
			}
			found = c
		}
		if found == nil {
			continue
		}
		if found.hasChildren() {
			return ReferenceRecord{}, newError(ReasonBadStructure, path+"/"+tag, "<%s> holds child elements", tag)
		}
		if v := strings.TrimSpace(found.text); v != "" && key == "" {
			key = v
		}
	}
	if key == "" {
		return ReferenceRecord{}, newError(ReasonMissingField, path+"/"+kind.Key[0],
			"%s record without %s, the key of %s", kind.Type, strings.Join(kind.Key, " or "), kind.Name)
	}
	doc, err := json.Marshal(referenceValue(n, kind.Lists, true))
	if err != nil {
		return ReferenceRecord{}, wrapError(ReasonBadStructure, path, err, "render the record")
	}
	return ReferenceRecord{Index: index, Key: key, Doc: doc}, nil
}

// referenceValue renders an element (see ReferenceRecord.Doc). lists names
// the record's children that are always arrays; top marks the record
// element, which is always an object.
func referenceValue(n *node, lists []string, top bool) any {
	text := strings.TrimSpace(n.text)
	if !top && len(n.attrs) == 0 && !n.hasChildren() {
		return text
	}
	obj := make(map[string]any, len(n.attrs)+n.nchildren+1)
	for _, a := range n.attrs {
		if name := qualified(a.Name); !strings.HasPrefix(name, "xmlns") {
			obj[name] = a.Value
		}
	}
	for c := n.first; c != nil; c = c.next {
		v := referenceValue(c, nil, false)
		switch prev, ok := obj[c.name].([]any); {
		case ok:
			obj[c.name] = append(prev, v)
		case obj[c.name] != nil:
			obj[c.name] = []any{obj[c.name], v}
		case top && slices.Contains(lists, c.name):
			obj[c.name] = []any{v}
		default:
			obj[c.name] = v
		}
	}
	if text != "" {
		obj["TEXT"] = text
	}
	return obj
}
