package sis

import (
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// MaxRecs is the largest RECS a SCHD message may declare (processing rules R5.2).
const MaxRecs = 9999

// schdState collects a SCHD body while it streams past.
type schdState struct {
	recsPath  string
	sawBody   bool
	sawSCHD   bool
	seenFLIDs map[flight.FLID]int // snapshot only: FLID → record index
}

// schdBody decodes the rest of MSG for SCHD DNLD/RESP/ADFT. RECS may sit
// under MSG or inside SCHD; FLTR records may sit inside SCHD or (leniently)
// directly under MSG.
func (d *decoder) schdBody() error {
	st := &schdState{}
	if d.msg.Kind == KindSnapshot {
		st.seenFLIDs = map[flight.FLID]int{}
	}
	err := d.msgChildren(func(t xml.StartElement) error {
		switch qualified(t.Name) {
		case "RECS":
			return d.recs(t, st, "MSG/RECS")
		case "FLTR":
			st.sawBody = true
			return d.fltr(t, st, "MSG")
		case "SCHD":
			if st.sawSCHD {
				return newError(ReasonDuplicateField, "MSG/SCHD[2]", "<SCHD> occurs twice")
			}
			st.sawSCHD, st.sawBody = true, true
			if d.tryParallelSCHD(st) {
				return nil
			}
			return d.schdElement(st)
		case "META":
			return newError(ReasonDuplicateField, "MSG/META[2]", "<META> occurs twice")
		default:
			return d.ignoreElement(t)
		}
	})
	if err != nil {
		return err
	}
	return d.checkRecs(st)
}

// schdElement reads the children of <SCHD> up to </SCHD>.
func (d *decoder) schdElement(st *schdState) error {
	for {
		tok, err := d.scan.next()
		if err != nil {
			return unexpectedEOF(err, d.scan)
		}
		switch tok.kind {
		case tokenStart:
			t := tok.start()
			switch qualified(t.Name) {
			case "RECS":
				err = d.recs(t, st, "MSG/SCHD/RECS")
			case "FLTR":
				err = d.fltr(t, st, "MSG/SCHD")
			default:
				err = d.ignoreElement(t)
			}
			if err != nil {
				return err
			}
		case tokenText:
			if !isBlank(tok.text) {
				return newError(ReasonBadStructure, "MSG/SCHD", "text directly under <SCHD>")
			}
		case tokenEnd:
			return nil
		}
	}
}

func (d *decoder) recs(t xml.StartElement, st *schdState, path string) error {
	d.scan.resetTree()
	n, err := d.scan.readTree(t, path)
	if err != nil {
		return err
	}
	if st.recsPath != "" {
		return newError(ReasonDuplicateField, path, "RECS already given at %s", st.recsPath)
	}
	if n.hasChildren() {
		return newError(ReasonBadStructure, path, "<RECS> holds child elements")
	}
	st.recsPath = path
	recs, err := parseRecs(n.text, path, MaxRecs)
	if err != nil {
		return err
	}
	if recs > d.opts.MaxRecords {
		return newError(ReasonTooManyRecords, path, "RECS %d is more than the %d records a message may hold", recs, d.opts.MaxRecords)
	}
	if n := len(d.msg.Records) + len(d.msg.Refused); n > recs {
		return newError(ReasonRecsMismatch, path, "RECS %d but %d FLTR records precede it", recs, n)
	}
	d.msg.Recs = recs
	if cap(d.msg.Records) < recs {
		grown := make([]Record, len(d.msg.Records), recs)
		copy(grown, d.msg.Records)
		d.msg.Records = grown
	}
	return nil
}

// parseRecs reads a RECS value of a SCHD or reference-data message: decimal
// digits, leading zeros and surrounding white space allowed, at most
// limit. The significant digits are counted before the value is summed, so
// no RECS overflows into range.
func parseRecs(raw, path string, limit int) (int, error) {
	text := strings.TrimSpace(raw)
	if !allDigits(text) {
		return 0, newError(ReasonBadRecs, path, "RECS %q is not a decimal number", raw)
	}
	if len(strings.TrimLeft(text, "0")) > len(strconv.Itoa(limit)) {
		return 0, newError(ReasonRecsOutOfRange, path, "RECS %s is outside 0–%d", text, limit)
	}
	recs := 0
	for i := 0; i < len(text); i++ {
		recs = recs*10 + int(text[i]-'0')
	}
	if recs > limit {
		return 0, newError(ReasonRecsOutOfRange, path, "RECS %d is outside 0–%d", recs, limit)
	}
	return recs, nil
}

func (d *decoder) fltr(t xml.StartElement, st *schdState, parent string) error {
	index := len(d.msg.Records) + len(d.msg.Refused) + 1
	path := fmt.Sprintf("%s/FLTR[%d]", parent, index)
	if index > MaxRecs {
		return newError(ReasonRecsOutOfRange, path, "more than %d FLTR records", MaxRecs)
	}
	if index > d.opts.MaxRecords {
		return newError(ReasonTooManyRecords, path, "more than %d FLTR records", d.opts.MaxRecords)
	}
	if d.msg.Recs >= 0 && index > d.msg.Recs {
		return newError(ReasonRecsMismatch, path, "RECS is %d but more FLTR records follow", d.msg.Recs)
	}
	d.scan.resetTree()
	n, err := d.scan.readTree(t, path)
	if err != nil {
		return err
	}
	full := d.msg.Kind == KindSnapshot
	rec, err := d.decodeRecord(n, path, index, recordRules{full: full, requireSODT: full})
	if err != nil {
		if refused, ok := d.skippable(err, full); ok {
			if st.seenFLIDs != nil {
				if first, dup := st.seenFLIDs[refused.FLID]; dup {
					e := newError(ReasonDuplicateFLID, path+"/FLID", "FLID %s already in FLTR[%d]", refused.FLID, first)
					e.FLID = refused.FLID.String()
					return e
				}
				st.seenFLIDs[refused.FLID] = index
			}
			refused.Index = index
			d.msg.Refused = append(d.msg.Refused, refused)
			return nil
		}
		return err
	}
	if st.seenFLIDs != nil {
		if first, dup := st.seenFLIDs[rec.FLID]; dup {
			e := newError(ReasonDuplicateFLID, path+"/FLID", "FLID %s already in FLTR[%d]", rec.FLID, first)
			e.FLID = rec.FLID.String()
			return e
		}
		st.seenFLIDs[rec.FLID] = index
	}
	d.msg.Records = append(d.msg.Records, rec)
	return nil
}

// SkippableReason reports whether a snapshot record refused for reason r
// is left out under Options.SkipRefusedRecords (when it has a readable
// FLID): a fault of the record's own content. A duplicate FLID, a limit,
// RECS or the XML itself refuse the message whole.
func SkippableReason(r Reason) bool {
	switch r {
	case ReasonBadTime, ReasonMissingField, ReasonDuplicateField, ReasonBadStructure, ReasonSeqZeroMixed, ReasonBadSequence:
		return true
	}
	return false
}

// skippable says whether a snapshot record's refusal err leaves the record
// out rather than refusing the message (Options.SkipRefusedRecords): a
// record with a readable FLID, refused for its own content — not for a
// duplicate FLID, nor for a limit, which are the whole message's.
func (d *decoder) skippable(err error, full bool) (RefusedRecord, bool) {
	var e *Error
	if !d.opts.SkipRefusedRecords || !full || !errors.As(err, &e) || e.FLID == "" {
		return RefusedRecord{}, false
	}
	if !SkippableReason(e.Reason) {
		return RefusedRecord{}, false
	}
	f, perr := flight.ParseFLID(e.FLID)
	if perr != nil {
		return RefusedRecord{}, false
	}
	return RefusedRecord{FLID: f, Err: e}, true
}

func (d *decoder) checkRecs(st *schdState) error {
	if !st.sawBody && st.recsPath == "" {
		return newError(ReasonMissingBody, "MSG/SCHD", "SCHD message without <SCHD> body")
	}
	if st.recsPath == "" {
		if d.msg.Kind == KindSnapshot {
			return newError(ReasonMissingField, "MSG/SCHD/RECS", "snapshot without RECS")
		}
		return nil
	}
	if got := len(d.msg.Records) + len(d.msg.Refused); got != d.msg.Recs {
		return newError(ReasonRecsMismatch, st.recsPath, "RECS is %d but %d FLTR records arrived", d.msg.Recs, got)
	}
	return nil
}
