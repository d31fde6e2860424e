package sis

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Decode turns one raw mailbox message into a typed Message. It copies raw
// once; DecodeString avoids even that.
//
// Every rejection is an *Error (use errors.As) with a Reason, the element
// Path and a Class. When META was decoded before the rejection, the returned
// Message is non-nil and carries Meta and Kind only (no records), so the
// caller can still log the upstream identity; an UNKNOWN_TYPE rejection
// always comes with such a Message. Decode is meant
// never to panic; should a bug make it panic all the same, the panic is
// raised in the caller's goroutine (one of a chunk worker as a
// *WorkerPanic), where the caller can recover it.
func Decode(raw []byte, opts Options) (*Message, error) {
	opts = opts.withDefaults()
	if int64(len(raw)) > opts.MaxBytes { // before the copy, so an oversize message costs nothing
		return nil, oversize(len(raw), opts.MaxBytes)
	}
	return DecodeString(string(raw), opts)
}

// DecodeString is Decode for a message already held as a string (the
// mailbox's text column). The decoded values are substrings of raw where
// possible, so a Message keeps raw's memory alive while it is referenced.
func DecodeString(raw string, opts Options) (*Message, error) {
	sc := scratchPool.Get().(*scratch)
	msg, err := decodeWith(raw, opts, sc)
	scratchPool.Put(sc)
	return msg, err
}

// decodeWith is DecodeString with sc's arena and groups, which it leaves
// cleared in sc for the next message.
func decodeWith(raw string, opts Options, sc *scratch) (*Message, error) {
	opts = opts.withDefaults()
	if int64(len(raw)) > opts.MaxBytes {
		return nil, oversize(len(raw), opts.MaxBytes)
	}
	raw, err := toUTF8(strings.TrimPrefix(raw, utf8BOM))
	if err != nil {
		return nil, err
	}
	sc.scan.reuse(raw, limitsOf(opts))
	sc.scan.nodes = sc.nodes
	sc.dec = decoder{opts: opts, scan: &sc.scan, groups: sc.groups}
	d := &sc.dec // a large snapshot's decode moves on to other scanners; sc.scan is its first
	msg, err := d.decode()
	sc.keep(d.groups)
	if err != nil {
		if msg != nil {
			msg.Records, msg.Deletions, msg.Positions, msg.Reference = nil, nil, nil, nil
		}
		return msg, err
	}
	return msg, nil
}

// scratch is what a decode reuses from one message to the next: the node
// arena's first blocks, readRecord's groups, the decoder and its first
// scanner with the scanner's buffers. A FLOP's decode needs a few dozen
// nodes; allocating and clearing their block anew for every message was a
// third of the bytes a FLOP's decode allocated, the decoder and scanner a
// third of what remained after that.
type scratch struct {
	nodes  arena
	groups [][]*node
	dec    decoder
	scan   scanner
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// scratchBlocks is how many arena blocks a pooled scratch keeps (the small
// first block and one large one): a large message's further blocks are
// left to the garbage collector.
const scratchBlocks = 2

// scratchBuffer is the largest scanner buffer (in elements) a pooled
// scratch keeps.
const scratchBuffer = 1024

// keep takes back a decode's arena, groups and scanner buffers, cleared —
// they hold the message's text and attributes, which must not outlive it
// in the pool — for the next decode. Nothing a Message holds points into
// the arena or the buffers (its values are strings and maps).
func (sc *scratch) keep(groups [][]*node) {
	nodes := &sc.scan.nodes
	blocks := nodes.blocks[:min(len(nodes.blocks), scratchBlocks)]
	for _, b := range blocks[:min(len(blocks), nodes.touched)] {
		clear(b)
	}
	for i := range groups {
		clear(groups[i][:cap(groups[i])])
		groups[i] = groups[i][:0]
	}
	attrs, buf, open := sc.scan.attrBuf, sc.scan.buf, sc.scan.open
	if cap(attrs) > scratchBuffer || cap(buf) > scratchBuffer || cap(open) > scratchBuffer {
		attrs, buf, open = nil, nil, nil
	} else {
		clear(attrs[:max(sc.scan.attrsUsed, len(attrs))])
		clear(open[:cap(open)])
	}
	sc.nodes, sc.groups, sc.dec = arena{blocks: blocks}, groups, decoder{}
	sc.scan = scanner{attrBuf: attrs[:0], buf: buf[:0], open: open[:0]}
}

func oversize(n int, limit int64) *Error {
	return newError(ReasonOversize, "", "%d bytes exceed the limit of %d", n, limit)
}

type decoder struct {
	opts Options
	scan *scanner
	msg  *Message
	// groups is scratch space for decodeRecord, indexed by field order.
	groups [][]*node
	// items and ignored count the message's collection and record items
	// and its unmapped elements and attributes, against their limits.
	items, ignored int
	// resent are the input ranges of META's ResendFields elements, which
	// the content digest leaves out; cuts is their first storage.
	resent [][2]int
	cuts   [2][2]int
}

func (d *decoder) decode() (*Message, error) {
	root, err := d.root()
	if err != nil {
		return nil, err
	}
	if qualified(root.Name) != "MSG" {
		return nil, newError(ReasonBadRoot, qualified(root.Name), "root element is <%s>, want <MSG>", qualified(root.Name))
	}
	meta, err := d.meta()
	if err != nil {
		return nil, err
	}
	d.msg = &Message{Meta: meta, Recs: -1}
	kind, subtype, err := classify(meta)
	d.msg.Kind = kind
	if err != nil {
		return d.msg, err
	}
	switch kind {
	case KindSnapshot, KindADFT:
		err = d.schdBody()
	case KindFLOP, KindFDEL:
		err = d.flopBody(subtype)
	case KindReference:
		err = d.referenceBody(referenceKinds[upper(meta.Type)])
	case KindNotApplied:
		na := notApplied[upper(meta.Type)]
		d.msg.NotApplied = &na
		err = d.skipBody()
	}
	if err != nil {
		return d.msg, err
	}
	if err := d.trailer(); err != nil {
		return d.msg, err
	}
	d.msg.ContentDigest = contentDigest(d.scan.input, d.resent)
	return d.msg, nil
}

// skipBody reads the rest of MSG without decoding it (a type FlightFeed
// does not apply): the message must still be well-formed XML within the
// limits, and its content digest tells a re-sent copy.
func (d *decoder) skipBody() error {
	return d.msgChildren(func(t xml.StartElement) error {
		if qualified(t.Name) == "META" {
			return newError(ReasonDuplicateField, "MSG/META[2]", "<META> occurs twice")
		}
		return d.scan.skip()
	})
}

// utf8BOM is the byte order mark that Windows tools write before a UTF-8
// document. XML allows it at the start; DecodeString drops it there, and
// root accepts it between the XML declaration and the root element too,
// where some AODB exports put it (the tokenizer would otherwise see text).
const utf8BOM = "\uFEFF"

// root skips the prolog and returns the root start element.
func (d *decoder) root() (xml.StartElement, error) {
	for {
		tok, err := d.scan.next()
		if errors.Is(err, io.EOF) {
			return xml.StartElement{}, newError(ReasonMalformedXML, "", "no root element")
		}
		if err != nil {
			return xml.StartElement{}, err
		}
		switch tok.kind {
		case tokenStart:
			t := tok.start()
			return t, nil
		case tokenText:
			if len(strings.Trim(tok.text, " \t\r\n"+utf8BOM)) > 0 {
				return xml.StartElement{}, newError(ReasonMalformedXML, "", "text before the root element")
			}
		}
	}
}

// trailer checks that nothing but white space, comments and processing
// instructions follows the root element.
func (d *decoder) trailer() error {
	for {
		tok, err := d.scan.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch tok.kind {
		case tokenStart:
			t := tok.start()
			return newError(ReasonMalformedXML, "", "second root element <%s>", qualified(t.Name))
		case tokenText:
			if !isBlank(tok.text) {
				return newError(ReasonMalformedXML, "", "text after the root element")
			}
		}
	}
}

// msgChildren calls visit for every child element of MSG until </MSG>;
// visit must consume the child (readTree or skip). Text directly under MSG
// is a structure error.
func (d *decoder) msgChildren(visit func(xml.StartElement) error) error {
	for {
		tok, err := d.scan.next()
		if err != nil {
			return unexpectedEOF(err, d.scan)
		}
		switch tok.kind {
		case tokenStart:
			t := tok.start()
			if err := visit(t); err != nil {
				return err
			}
		case tokenText:
			if !isBlank(tok.text) {
				return newError(ReasonBadStructure, "MSG", "text directly under <MSG>")
			}
		case tokenEnd:
			return nil
		}
	}
}

// ignoreElement counts an unmapped element and skips it.
func (d *decoder) ignoreElement(start xml.StartElement) error {
	if err := d.ignore(qualified(start.Name), d.scan.path); err != nil {
		return err
	}
	return d.scan.skip()
}

// ignore counts an unmapped element or attribute ("TAG", "TAG@ATTR") for
// the ignored-tags metric, within Options.MaxIgnored; where renders its path
// (only for an error).
func (d *decoder) ignore(tag string, where func() string) error {
	if d.ignored++; d.ignored > d.opts.MaxIgnored {
		return newError(ReasonTooManyIgnored, where(), "more than %d elements and attributes the module does not map", d.opts.MaxIgnored)
	}
	d.msg.ignore(tag)
	return nil
}

func classify(meta Meta) (Kind, FlopSubtype, error) {
	typ, styp := upper(meta.Type), upper(meta.Styp)
	switch {
	case typ == TypeSCHD:
		kind, ok := schdSubtypes[styp]
		if !ok {
			return KindUnknown, FlopSubtype{}, newError(ReasonUnknownStyp, "MSG/META/STYP", "SCHD subtype %q", meta.Styp)
		}
		return kind, FlopSubtype{}, nil
	case typ == TypeFLOP:
		sub, ok := flopSubtypes[styp]
		if !ok {
			return KindUnknown, FlopSubtype{}, newError(ReasonUnknownStyp, "MSG/META/STYP", "FLOP subtype %q", meta.Styp)
		}
		if sub.Delete {
			return KindFDEL, sub, nil
		}
		return KindFLOP, sub, nil
	case referenceKinds[typ].Type != "":
		if _, ok := referenceOps[styp]; !ok {
			return KindUnknown, FlopSubtype{}, newError(ReasonUnknownStyp, "MSG/META/STYP", "reference data %s subtype %q (DNLD, RESP, ADD, UPD or DEL)", meta.Type, meta.Styp)
		}
		return KindReference, FlopSubtype{}, nil
	case notApplied[typ].Type != "":
		return KindNotApplied, FlopSubtype{}, nil
	default:
		return KindUnknown, FlopSubtype{}, newError(ReasonUnknownType, "MSG/META/TYPE", "message type %q", meta.Type)
	}
}

func upper(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'a' && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func parseFLID(text, path string) (flight.FLID, error) {
	f, err := flight.ParseFLID(strings.TrimSpace(text))
	if err != nil {
		return 0, wrapError(ReasonBadFLID, path, err, "FLID %q", text)
	}
	return f, nil
}
