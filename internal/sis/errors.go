package sis

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Reason is a machine-readable rejection code, written to the mailbox note
// and counted in metrics.
type Reason string

// Every reason the decoder returns. One test case exists per code.
const (
	// ReasonOversize: the raw message exceeds Options.MaxBytes (checked
	// before parsing).
	ReasonOversize Reason = "OVERSIZE"
	// ReasonMalformedXML: not well-formed XML (syntax, mismatched or
	// unclosed tags, invalid UTF-8, content after the root).
	ReasonMalformedXML Reason = "MALFORMED_XML"
	// ReasonBadEncoding: the message is not valid UTF-8, and the encoding
	// its XML declaration names is not supported (or UTF-16) or does not
	// decode the bytes either.
	ReasonBadEncoding Reason = "BAD_ENCODING"
	// ReasonTooDeep: element nesting exceeds Options.MaxDepth.
	ReasonTooDeep Reason = "TOO_DEEP"
	// ReasonTooManyElements: the message has more elements than
	// Options.MaxElements, or one record (or META) more than
	// Options.MaxRecordElements.
	ReasonTooManyElements Reason = "TOO_MANY_ELEMENTS"
	// ReasonTooManyAttributes: an element has more attributes than
	// Options.MaxElementAttributes, or the message more than
	// Options.MaxAttributes.
	ReasonTooManyAttributes Reason = "TOO_MANY_ATTRIBUTES"
	// ReasonTooManyItems: a field of a record has more collection or record
	// items than Options.MaxCollectionItems, a record more than
	// Options.MaxRecordItems, or the message more than Options.MaxItems.
	ReasonTooManyItems Reason = "TOO_MANY_ITEMS"
	// ReasonTooManyRecords: the message has more records (FLTR, FLOP, FDEL)
	// than Options.MaxRecords.
	ReasonTooManyRecords Reason = "TOO_MANY_RECORDS"
	// ReasonTooManyIgnored: the message has more unmapped elements and
	// attributes than Options.MaxIgnored.
	ReasonTooManyIgnored Reason = "TOO_MANY_IGNORED"
	// ReasonValueTooLong: a text or attribute value inside a record or META
	// is longer than Options.MaxValueBytes.
	ReasonValueTooLong Reason = "VALUE_TOO_LONG"
	// ReasonBadRoot: the root element is not MSG.
	ReasonBadRoot Reason = "BAD_ROOT"
	// ReasonMissingMeta: META, or one of its required fields (SNDR, SEQN,
	// DDTM|DTTM, TYPE, STYP), is absent or empty, or META is not first.
	ReasonMissingMeta Reason = "MISSING_META"
	// ReasonMetaFieldTooLong: a META field is longer than MaxMetaFieldChars.
	ReasonMetaFieldTooLong Reason = "META_FIELD_TOO_LONG"
	// ReasonBadSeqn: META SEQN is not 1 to 6 decimal digits.
	ReasonBadSeqn Reason = "BAD_SEQN"
	// ReasonBadTime: a META time (yyyyMMddHHmmss[SSS]) or a SIS time
	// (DDMONYYHHMM) that the module must read does not parse.
	ReasonBadTime Reason = "BAD_TIME"
	// ReasonUnknownType: META TYPE is none the module knows.
	ReasonUnknownType Reason = "UNKNOWN_TYPE"
	// ReasonUnknownStyp: META STYP is not valid for its TYPE.
	ReasonUnknownStyp Reason = "UNKNOWN_STYP"
	// ReasonMissingBody: a SCHD or FLOP message without its body.
	ReasonMissingBody Reason = "MISSING_BODY"
	// ReasonMissingField: a required element is absent or empty (FLID, RECS
	// of a snapshot, SODT of a snapshot record, the subject field of a FLOP).
	ReasonMissingField Reason = "MISSING_FIELD"
	// ReasonDuplicateField: an element or item key that may occur once
	// occurs twice.
	ReasonDuplicateField Reason = "DUPLICATE_FIELD"
	// ReasonBadStructure: an element has a shape its field cannot hold (child
	// elements inside a scalar, text where only elements belong).
	ReasonBadStructure Reason = "BAD_STRUCTURE"
	// ReasonBadFLID: FLID is empty, not all digits, or longer than 12.
	ReasonBadFLID Reason = "BAD_FLID"
	// ReasonBadRecs: RECS is not a decimal number.
	ReasonBadRecs Reason = "BAD_RECS"
	// ReasonRecsOutOfRange: RECS is outside 0–9999, or more than 9999
	// records arrived.
	ReasonRecsOutOfRange Reason = "RECS_OUT_OF_RANGE"
	// ReasonRecsMismatch: RECS differs from the number of FLTR records.
	ReasonRecsMismatch Reason = "RECS_MISMATCH"
	// ReasonDuplicateFLID: one snapshot holds the same FLID twice.
	ReasonDuplicateFLID Reason = "DUPLICATE_FLID"
	// ReasonSeqZeroMixed: a collection mixes sequence "0" (clear marker) with
	// real items.
	ReasonSeqZeroMixed Reason = "SEQ_ZERO_MIXED"
	// ReasonBadSequence: a sequence attribute (GTNO, CKNO, …) is not a
	// decimal number.
	ReasonBadSequence Reason = "BAD_SEQUENCE"
)

// Reasons lists every reason code, for documentation and exhaustive tests.
var Reasons = []Reason{
	ReasonOversize, ReasonMalformedXML, ReasonBadEncoding, ReasonTooDeep, ReasonTooManyElements,
	ReasonTooManyAttributes, ReasonTooManyItems, ReasonTooManyRecords, ReasonTooManyIgnored,
	ReasonValueTooLong, ReasonBadRoot, ReasonMissingMeta,
	ReasonMetaFieldTooLong, ReasonBadSeqn, ReasonBadTime, ReasonUnknownType, ReasonUnknownStyp,
	ReasonMissingBody, ReasonMissingField, ReasonDuplicateField, ReasonBadStructure, ReasonBadFLID,
	ReasonBadRecs, ReasonRecsOutOfRange, ReasonRecsMismatch, ReasonDuplicateFLID, ReasonSeqZeroMixed,
	ReasonBadSequence,
}

// Class tells the failure matrix what to do with a rejected message.
type Class uint8

// Failure classes (processing rules R9).
const (
	// ClassIllegal: illegal or over-capacity message → DEAD, head released.
	ClassIllegal Class = iota + 1
	// ClassUnsupported: a message the module does not handle →
	// FAILED(UNSUPPORTED).
	ClassUnsupported
)

// String returns the class name.
func (c Class) String() string {
	switch c {
	case ClassIllegal:
		return "ILLEGAL"
	case ClassUnsupported:
		return "UNSUPPORTED"
	default:
		return "UNKNOWN"
	}
}

// ClassOf returns the failure class of a reason.
func ClassOf(r Reason) Class {
	switch r {
	case ReasonUnknownType, ReasonUnknownStyp:
		return ClassUnsupported
	default:
		return ClassIllegal
	}
}

// Error is a precise rejection: what is wrong (Reason), where (Path, e.g.
// "MSG/SCHD/FLTR[3]/GTDT[2]@GTNO"), a human detail, and the failure class.
// Use errors.As to get it from any error Decode returns.
type Error struct {
	Reason Reason
	Path   string
	// FLID is the refused record's FLID, when the record carries a readable
	// one ("" otherwise, and outside records).
	FLID   string
	Detail string
	Class  Class
	// Err is the underlying cause, when there is one (an *xml.SyntaxError,
	// a flight parse error).
	Err error
}

// Error renders "sis: REASON at PATH (FLID n): detail: cause" on one line
// (no FLID part when the record has none): control
// characters that a detail or a cause may carry (a quoted value, a wrapped
// parse error) are escaped, because the text ends up in the mailbox's note
// column and in line-oriented logs.
func (e *Error) Error() string {
	msg := "sis: " + string(e.Reason)
	if e.Path != "" {
		msg += " at " + e.Path
	}
	if e.FLID != "" {
		msg += " (FLID " + e.FLID + ")"
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return oneLine(msg)
}

// oneLine escapes control characters (C0 such as \n \r \t, DEL, C1) and the
// Unicode line and paragraph separators the way Go quotes them.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, breaksLine) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		if !breaksLine(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r) // '\n', '\x00', '\u2028'
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func breaksLine(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Note returns a one-line note for the mailbox's note column, at most max
// bytes (cut on a rune boundary), starting with the reason code.
func (e *Error) Note(maxBytes int) string {
	s := e.Error()[len("sis: "):]
	if maxBytes <= 0 || len(s) <= maxBytes {
		return s
	}
	cut := maxBytes
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}

// ReasonOf returns the reason of err if it is (or wraps) an *Error.
func ReasonOf(err error) (Reason, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason, true
	}
	return "", false
}

func newError(reason Reason, path, format string, args ...any) *Error {
	return &Error{Reason: reason, Path: path, Detail: fmt.Sprintf(format, args...), Class: ClassOf(reason)}
}

func wrapError(reason Reason, path string, cause error, format string, args ...any) *Error {
	e := newError(reason, path, format, args...)
	e.Err = cause
	return e
}
