package sis

import (
	"errors"
	"fmt"
	"slices"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// recordRules say how a FLTR or FLOP record is read.
type recordRules struct {
	// full: a full snapshot (absent field = Clear); otherwise an increment.
	full bool
	// requireSODT: the operation day must be derivable (DNLD/RESP).
	requireSODT bool
	// subject: for FLOP, the subtype whose field(s) the record must carry.
	subject *FlopSubtype
}

var (
	fieldSpecs = flight.Fields()
	sodtOrder  = flight.FieldOrder("SODT")
)

// decodeRecord turns one FLTR/FLOP element into a Record: its FLID, the
// operation day from SODT, and one command per mapped field it carries, in
// canonical field order. Unmapped children are counted as ignored. A
// refusal names the record's FLID when the record carries a readable one,
// so that a person finds the flight, not only the record's position.
func (d *decoder) decodeRecord(n *node, path string, index int, rules recordRules) (Record, error) {
	rec, err := d.readRecord(n, path, index, rules)
	var e *Error
	if err != nil && errors.As(err, &e) && e.FLID == "" {
		e.FLID = recordFLID(n)
	}
	return rec, err
}

// recordFLID is the FLID a record element carries, "" when it has none
// that reads as one (absent, twice, malformed).
func recordFLID(n *node) string {
	var flidNode *node
	for c := n.first; c != nil; c = c.next {
		if c.name != "FLID" {
			continue
		}
		if flidNode != nil {
			return ""
		}
		flidNode = c
	}
	if flidNode == nil {
		return ""
	}
	flid, err := flidOf(flidNode, "")
	if err != nil {
		return ""
	}
	return flid.String()
}

func (d *decoder) readRecord(n *node, path string, index int, rules recordRules) (Record, error) {
	if !isBlank(n.text) {
		return Record{}, newError(ReasonBadStructure, path, "text directly inside <%s>", n.name)
	}
	if d.groups == nil {
		d.groups = make([][]*node, len(fieldSpecs))
	}
	groups := d.groups
	for i := range groups {
		groups[i] = groups[i][:0]
	}
	var flidNode *node
	present, items := 0, 0
	for c := n.first; c != nil; c = c.next {
		if c.name == "FLID" {
			if flidNode != nil {
				return Record{}, newError(ReasonDuplicateField, path+"/FLID[2]", "FLID occurs twice")
			}
			flidNode = c
			continue
		}
		pos := flight.FieldOrder(c.name)
		if pos < 0 {
			if err := d.ignore(c.name, elemPath{parent: path, tag: c.name}.String); err != nil {
				return Record{}, err
			}
			continue
		}
		kind := fieldSpecs[pos].Kind
		if len(groups[pos]) > 0 && (kind == flight.KindScalar || kind == flight.KindAnomaly) {
			return Record{}, newError(ReasonDuplicateField, fmt.Sprintf("%s/%s[2]", path, c.name), "%s may occur once per record", c.name)
		}
		if kind == flight.KindCollection || kind == flight.KindRecord {
			items++
			if err := d.countItem(path, c.name, len(groups[pos])+1, items); err != nil {
				return Record{}, err
			}
		}
		if len(groups[pos]) == 0 {
			present++
		}
		groups[pos] = append(groups[pos], c)
	}
	if flidNode == nil {
		return Record{}, newError(ReasonMissingField, path+"/FLID", "record without FLID")
	}
	flid, err := flidOf(flidNode, path+"/FLID")
	if err != nil {
		return Record{}, err
	}
	clears := subjectClears(rules.subject, groups)
	rec := Record{Index: index, Commands: flight.Commands{FLID: flid, Full: rules.full}}
	rec.Cmds = make([]flight.Command, 0, present+len(clears))
	for pos, nodes := range groups {
		if len(nodes) == 0 {
			if len(clears) > 0 && clears[0] == pos {
				rec.Cmds = append(rec.Cmds, flight.Command{Tag: fieldSpecs[pos].Tag, Op: flight.OpClear})
				clears = clears[1:]
			}
			continue
		}
		cmd, err := d.command(&fieldSpecs[pos], nodes, path)
		if err != nil {
			return Record{}, err
		}
		rec.Cmds = append(rec.Cmds, cmd)
	}
	day, err := d.operationDay(groups[sodtOrder], path, rules.requireSODT)
	if err != nil {
		return Record{}, err
	}
	rec.OperationDay = day
	return rec, nil
}

// countItem bounds the items of a collection or record field (n is the
// item's 1-based index in its field), of one record (inRecord) and of the
// message: each item becomes a map, the costliest part of a decoded record.
func (d *decoder) countItem(path, tag string, n, inRecord int) error {
	d.items++
	at := elemPath{parent: path, tag: tag, index: n} // rendered only for an error
	switch {
	case n > d.opts.MaxCollectionItems:
		return newError(ReasonTooManyItems, at.String(), "more than %d <%s> items in one record", d.opts.MaxCollectionItems, tag)
	case inRecord > d.opts.MaxRecordItems:
		return newError(ReasonTooManyItems, at.String(), "more than %d collection and record items in one record", d.opts.MaxRecordItems)
	case d.items > d.opts.MaxItems:
		return newError(ReasonTooManyItems, at.String(), "more than %d collection and record items in the message", d.opts.MaxItems)
	}
	return nil
}

func flidOf(n *node, path string) (flight.FLID, error) {
	if n.hasChildren() {
		return 0, newError(ReasonBadStructure, path, "<FLID> holds child elements")
	}
	return parseFLID(n.text, path)
}

// subjectClears returns a Clear command for each subject field of a FLOP
// subtype that the record does not carry (FlopSubtype: an absent subject
// field means the AODB has no value for it), nil for any other record.
func subjectClears(subject *FlopSubtype, groups [][]*node) []int {
	if subject == nil {
		return nil
	}
	var absent []int
	for _, tag := range subject.Fields {
		if pos := flight.FieldOrder(tag); pos >= 0 && len(groups[pos]) == 0 {
			absent = append(absent, pos)
		}
	}
	slices.Sort(absent) // in field order, as the record's commands
	return absent
}

// operationDay derives the record's day from SODT in the airport zone.
func (d *decoder) operationDay(sodt []*node, path string, required bool) (string, error) {
	if len(sodt) == 0 || isBlank(sodt[0].text) {
		if required {
			return "", newError(ReasonMissingField, path+"/SODT", "snapshot record without SODT: its operation day cannot be determined")
		}
		return "", nil
	}
	day, err := flight.OperationDayOf(sodt[0].text, d.opts.Location)
	if err != nil {
		return "", wrapError(ReasonBadTime, path+"/SODT", err, "SODT %q", sodt[0].text)
	}
	return day, nil
}

// command builds the one command for a field the record carries.
func (d *decoder) command(spec *flight.FieldSpec, nodes []*node, path string) (flight.Command, error) {
	switch spec.Kind {
	case flight.KindScalar:
		return d.scalarCommand(spec, nodes[0], elemPath{parent: path, tag: spec.Tag})
	case flight.KindAnomaly:
		return anomalyCommand(spec, nodes[0], elemPath{parent: path, tag: spec.Tag})
	case flight.KindCollection:
		return collectionCommand(spec, nodes, path)
	default: // flight.KindRecord
		return recordCommand(spec, nodes, path)
	}
}

// scalarCommand: present with text = Set (verbatim); empty or blank = Clear
// (SIS §1.6.3: an empty tag deletes the value).
func (d *decoder) scalarCommand(spec *flight.FieldSpec, n *node, at elemPath) (flight.Command, error) {
	if n.hasChildren() {
		return flight.Command{}, newError(ReasonBadStructure, at.String(), "scalar <%s> holds child elements", spec.Tag)
	}
	for _, a := range n.attrs {
		if err := d.ignore(spec.Tag+"@"+qualified(a.Name), func() string { return at.attr(qualified(a.Name)) }); err != nil {
			return flight.Command{}, err
		}
	}
	if isBlank(n.text) {
		return flight.Command{Tag: spec.Tag, Op: flight.OpClear}, nil
	}
	if spec.TypedTimeColumn != "" {
		if _, err := flight.ParseSISTime(n.text, d.opts.Location); err != nil {
			return flight.Command{}, wrapError(ReasonBadTime, at.String(), err, "%s %q", spec.Tag, n.text)
		}
	}
	return flight.Command{Tag: spec.Tag, Op: flight.OpSet, Value: n.text}, nil
}

// anomalyCommand: an object with any attribute, child or text = Set; an
// empty element = Clear.
func anomalyCommand(spec *flight.FieldSpec, n *node, at elemPath) (flight.Command, error) {
	item, err := flatten(n, at)
	if err != nil {
		return flight.Command{}, err
	}
	if len(item) == 0 {
		return flight.Command{Tag: spec.Tag, Op: flight.OpClear}, nil
	}
	return flight.Command{Tag: spec.Tag, Op: flight.OpSet, Anomaly: item}, nil
}

// recordCommand: every occurrence that carries something (an attribute, a
// child or text) is one item, and the record is a Replace (processing rules R5.4). An
// empty tag (<SRVT/>, <SRVT></SRVT>, blank text) is the SIS §1.6.3 "empty P
// tag deletes the value" (processing rules R10): it carries nothing and is dropped,
// and a record whose occurrences are all empty is a Clear, in a snapshot and
// in an increment alike, so no empty object ever reaches the state or Kafka.
func recordCommand(spec *flight.FieldSpec, nodes []*node, path string) (flight.Command, error) {
	items := make([]flight.Item, 0, len(nodes))
	for i, n := range nodes {
		item, err := flatten(n, elemPath{parent: path, tag: spec.Tag, index: i + 1})
		if err != nil {
			return flight.Command{}, err
		}
		if len(item) == 0 {
			continue
		}
		items = append(items, item)
	}
	if len(items) == 0 {
		return flight.Command{Tag: spec.Tag, Op: flight.OpClear}, nil
	}
	return flight.Command{Tag: spec.Tag, Op: flight.OpReplace, Items: items}, nil
}

// collectionCommand applies the sequence-0 rules: items that all carry
// sequence "0" clear the collection; "0" mixed with real items is illegal.
// Entirely empty occurrences (<DELY/>) carry nothing and are dropped; if
// nothing remains the collection is cleared. Otherwise Replace.
func collectionCommand(spec *flight.FieldSpec, nodes []*node, path string) (flight.Command, error) {
	items := make([]flight.Item, 0, len(nodes))
	zeros, firstZero, firstReal := 0, -1, -1
	for i, n := range nodes {
		at := elemPath{parent: path, tag: spec.Tag, index: i + 1}
		item, err := flatten(n, at)
		if err != nil {
			return flight.Command{}, err
		}
		if len(item) == 0 {
			continue
		}
		isZero := false
		if spec.SeqAttr != "" {
			if v, ok := item[spec.SeqAttr]; ok {
				seq, err := flight.ParseSequence(v)
				if err != nil {
					return flight.Command{}, wrapError(ReasonBadSequence, seqPath(n, at, spec.SeqAttr), err, "%s %q", spec.SeqAttr, v)
				}
				isZero = seq == 0
			}
		}
		if isZero {
			zeros++
			if firstZero < 0 {
				firstZero = i
			}
		} else if firstReal < 0 {
			firstReal = i
		}
		items = append(items, item)
	}
	switch {
	case zeros > 0 && firstReal >= 0:
		at := elemPath{parent: path, tag: spec.Tag, index: firstZero + 1}
		return flight.Command{}, newError(ReasonSeqZeroMixed, seqPath(nodes[firstZero], at, spec.SeqAttr),
			"%s=0 (clear marker) mixed with real %s items such as %s[%d]", spec.SeqAttr, spec.Tag, spec.Tag, firstReal+1)
	case len(items) == 0 || zeros == len(items):
		return flight.Command{Tag: spec.Tag, Op: flight.OpClear}, nil
	default:
		return flight.Command{Tag: spec.Tag, Op: flight.OpReplace, Items: items}, nil
	}
}

// seqPath points at the sequence attribute, or at the child element when the
// feed wrote the sequence as one.
func seqPath(n *node, at elemPath, seqAttr string) string {
	for _, a := range n.attrs {
		if qualified(a.Name) == seqAttr {
			return at.attr(seqAttr)
		}
	}
	return at.child(seqAttr)
}
