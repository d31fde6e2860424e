package sis

import (
	"encoding/xml"
	"fmt"
)

// flopBody decodes the FLOP records of a FLOP message (or the FLIDs of an
// FDEL). A body may hold one or more <FLOP> records.
func (d *decoder) flopBody(subtype FlopSubtype) error {
	count := 0
	err := d.msgChildren(func(t xml.StartElement) error {
		switch qualified(t.Name) {
		case "FLOP":
			count++
			return d.flopRecord(t, subtype, count)
		case "META":
			return newError(ReasonDuplicateField, "MSG/META[2]", "<META> occurs twice")
		default:
			return d.ignoreElement(t)
		}
	})
	if err != nil {
		return err
	}
	if count == 0 {
		return newError(ReasonMissingBody, "MSG/FLOP", "FLOP %s message without a <FLOP> record", subtype.Styp)
	}
	return nil
}

func (d *decoder) flopRecord(t xml.StartElement, subtype FlopSubtype, index int) error {
	path := fmt.Sprintf("MSG/FLOP[%d]", index)
	if index > d.opts.MaxRecords {
		return newError(ReasonTooManyRecords, path, "more than %d <FLOP> records", d.opts.MaxRecords)
	}
	d.scan.resetTree()
	n, err := d.scan.readTree(t, path)
	if err != nil {
		return err
	}
	if subtype.Delete {
		return d.deletion(n, path)
	}
	rec, err := d.decodeRecord(n, path, index, recordRules{subject: &subtype})
	if err != nil {
		return err
	}
	d.msg.Records = append(d.msg.Records, rec)
	return nil
}

// deletion reads the FLID of an FDEL record; everything else in it is
// informational (FFID, …) and ignored.
func (d *decoder) deletion(n *node, path string) error {
	var flidNode *node
	for c := n.first; c != nil; c = c.next {
		if c.name != "FLID" {
			continue
		}
		if flidNode != nil {
			return newError(ReasonDuplicateField, path+"/FLID[2]", "FLID occurs twice")
		}
		flidNode = c
	}
	if flidNode == nil {
		return newError(ReasonMissingField, path+"/FLID", "FDEL record without FLID")
	}
	flid, err := flidOf(flidNode, path+"/FLID")
	if err != nil {
		return err
	}
	d.msg.Deletions = append(d.msg.Deletions, flid)
	return nil
}
