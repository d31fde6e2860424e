package sis

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const metaPath = "MSG/META"

// MaxMetaFieldChars bounds every META field (trimmed, in characters). No
// SIS META value is longer than 17 characters (DDTM with milliseconds); 64
// leaves room for long sender names and message ids (a UUID is 36). The
// bound matters downstream: the identity key SNDR|TYPE|STYP|SEQN is indexed
// in PostgreSQL, whose btree entries cannot exceed about 2,700 bytes, and
// four fields of 64 characters stay near 1 KB even at 4 bytes a character.
const MaxMetaFieldChars = 64

// meta reads the first child of MSG, which must be META.
func (d *decoder) meta() (Meta, error) {
	for {
		tok, err := d.scan.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return Meta{}, newError(ReasonMalformedXML, "MSG", "unexpected end of input")
			}
			return Meta{}, err
		}
		switch tok.kind {
		case tokenStart:
			t := tok.start()
			if qualified(t.Name) != "META" {
				return Meta{}, newError(ReasonMissingMeta, metaPath, "<META> must be the first element of <MSG>, found <%s>", qualified(t.Name))
			}
			d.scan.resetTree()
			n, err := d.scan.readTree(t, metaPath)
			if err != nil {
				return Meta{}, err
			}
			// The send time's elements, tags included, for the content
			// digest: read with META, not parsed a second time.
			d.resent = d.cuts[:0]
			for c := n.first; c != nil; c = c.next {
				if isResendField(c.name) {
					d.resent = append(d.resent, [2]int{c.start, c.end})
				}
			}
			return d.decodeMeta(n)
		case tokenText:
			if !isBlank(tok.text) {
				return Meta{}, newError(ReasonBadStructure, "MSG", "text directly under <MSG>")
			}
		case tokenEnd:
			return Meta{}, newError(ReasonMissingMeta, metaPath, "<MSG> has no <META>")
		}
	}
}

func (d *decoder) decodeMeta(n *node) (Meta, error) {
	const timeField = 9
	var m Meta
	// The fields, DTTM sharing DDTM's place; seen has bit i set once
	// field i was read (a switch and a bit set: no maps for every message).
	field := func(name string) (target *string, i int) {
		switch name {
		case "SNDR":
			return &m.Sndr, 0
		case "RCVR":
			return &m.Rcvr, 1
		case "SEQN":
			return &m.Seqn, 2
		case "TYPE":
			return &m.Type, 3
		case "STYP":
			return &m.Styp, 4
		case "SORC":
			return &m.Sorc, 5
		case "MGID":
			return &m.Mgid, 6
		case "RMID":
			return &m.Rmid, 7
		case "APOT":
			return &m.Apot, 8
		case "DDTM", "DTTM":
			return &m.Time, timeField
		}
		return nil, -1
	}
	var seen uint16
	for c := n.first; c != nil; c = c.next {
		target, i := field(c.name)
		if target == nil {
			continue // unmapped META fields are harmless; the raw archive keeps them
		}
		if c.hasChildren() {
			return m, newError(ReasonBadStructure, metaPath+"/"+c.name, "<%s> holds child elements", c.name)
		}
		if seen&(1<<i) != 0 {
			return m, newError(ReasonDuplicateField, metaPath+"/"+c.name, "META field %s occurs twice", c.name)
		}
		seen |= 1 << i
		*target = strings.TrimSpace(c.text)
		if n := utf8.RuneCountInString(*target); n > MaxMetaFieldChars {
			return m, newError(ReasonMetaFieldTooLong, metaPath+"/"+c.name, "%s is %d characters, more than %d", c.name, n, MaxMetaFieldChars)
		}
		if i == timeField {
			m.TimeTag = c.name
		}
	}
	required := []struct {
		tag   string
		value string
	}{{"SNDR", m.Sndr}, {"SEQN", m.Seqn}, {"DDTM", m.Time}, {"TYPE", m.Type}, {"STYP", m.Styp}}
	for _, r := range required {
		if r.value == "" {
			what := r.tag
			if what == "DDTM" {
				what = "DDTM|DTTM"
			}
			return m, newError(ReasonMissingMeta, metaPath+"/"+r.tag, "required META field %s is missing or empty", what)
		}
	}
	seqn, err := parseSeqn(m.Seqn)
	if err != nil {
		return m, wrapError(ReasonBadSeqn, metaPath+"/SEQN", err, "SEQN %q", m.Seqn)
	}
	m.SeqnNum = int(seqn)
	t, err := ParseMetaTime(m.Time, d.opts.Location)
	if err != nil {
		return m, wrapError(ReasonBadTime, metaPath+"/"+m.TimeTag, err, "META time %q", m.Time)
	}
	m.ParsedTime = t
	return m, nil
}

// ErrBadMetaTime is wrapped by every ParseMetaTime failure.
var ErrBadMetaTime = errors.New("bad META time")

// ParseMetaTime parses a META time: yyyyMMddHHmmss or yyyyMMddHHmmssSSS in
// the airport's location. A 13-digit value, which real feeds send, is read as
// Unix epoch milliseconds (its only plausible meaning: 13 digits cannot be a
// truncated calendar time without losing the seconds' tens).
func ParseMetaTime(s string, loc *time.Location) (time.Time, error) {
	if !allDigits(s) {
		return time.Time{}, ErrBadMetaTime
	}
	switch len(s) {
	case 13:
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: %w", ErrBadMetaTime, err)
		}
		return time.UnixMilli(ms).In(loc), nil
	case 14, 17:
		t, err := time.ParseInLocation("20060102150405", s[:14], loc)
		if err != nil {
			// Not errors.Join: it puts a line break between the two
			// messages, and this text ends up in the one-line mailbox note.
			return time.Time{}, fmt.Errorf("%w: %w", ErrBadMetaTime, err)
		}
		if len(s) == 17 {
			ms := int(s[14]-'0')*100 + int(s[15]-'0')*10 + int(s[16]-'0')
			t = t.Add(time.Duration(ms) * time.Millisecond)
		}
		return t, nil
	default:
		return time.Time{}, ErrBadMetaTime
	}
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
