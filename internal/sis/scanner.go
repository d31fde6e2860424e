package sis

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// scanner streams the tokens encoding/xml's RawToken would (its own
// tokenizer, see xmltok.go) and adds what RawToken leaves out: start/end
// matching, unclosed elements at EOF, and the decode limits on depth,
// elements, attributes and value length. It reads element subtrees into an
// arena that is reused record after record, so memory stays bounded by the
// largest record, not the message.
type scanner struct {
	// input is the raw message; names and values are substrings of it
	// whenever the decoded text equals the raw bytes (no entities, no CR),
	// which saves one allocation per value.
	input string
	// base is where the scanned range starts in input and end where it
	// ends; baseDepth is how many elements (the first entries of open) are
	// open outside the range.
	base      int
	end       int
	baseDepth int
	// pos is the tokenizer's position in input (RawToken's InputOffset).
	pos int
	// needClose: the last token was a self-closing start tag, whose end
	// (closeRaw, closeName) comes next.
	needClose bool
	closeRaw  string
	closeName xml.Name
	// attrBuf holds the attributes of the start tags read since next was
	// last called outside readTree: those of a tree's start tag and of
	// everything readTree reads below it, or else of the last tag; buf is scratch
	// for text that entities or carriage returns make differ from the raw
	// bytes.
	attrBuf []xml.Attr
	buf     []byte
	// attrsUsed is how much of attrBuf was in use at most before its last
	// emptying (what a pooled scratch must clear).
	attrsUsed int
	// err is the tokenizer's first error, returned again on every call.
	err error
	// dec is encoding/xml, reading input[decBase:end], once the tokenizer
	// met a construct it leaves to encoding/xml (see xmltok.go).
	dec     *xml.Decoder
	decBase int
	lim     scanLimits
	// seen counts the message's elements and attributes up to the scanner's
	// position (a range scanner starts from the counts at its start).
	seen  scanCounts
	open  []string // names of the open elements, root first
	nodes arena
	// selfClosed: the last token was a self-closing start tag (<A/>), so
	// the next is its end, which encoding/xml makes up without reading.
	selfClosed bool
	// tokenStart is the input position where the last token next
	// returned begins (a start tag's '<').
	tokenStart int
	// tree is the record readTree is reading, for limit errors and the
	// per-record element count.
	tree struct {
		at       string // its indexed path, e.g. MSG/SCHD/FLTR[7]
		depth    int    // len(open) with it open
		elements int
	}
}

// scanLimits are the Options the scanner enforces.
type scanLimits struct {
	depth, elements, attributes, elementAttributes, treeElements, valueBytes int
}

func limitsOf(o Options) scanLimits {
	return scanLimits{
		depth: o.MaxDepth, elements: o.MaxElements, attributes: o.MaxAttributes,
		elementAttributes: o.MaxElementAttributes, treeElements: o.MaxRecordElements, valueBytes: o.MaxValueBytes,
	}
}

// scanCounts are what the limits count across the message.
type scanCounts struct {
	elements, attributes int
}

func newScanner(input string, lim scanLimits) *scanner {
	return newRangeScanner(input, 0, len(input), nil, 0, lim, scanCounts{})
}

// newRangeScanner scans input[lo:hi] as content of the elements named in
// open (copied), so depth limits, paths, text sharing and syntax-error line
// numbers are exactly those of a scan of the whole input. The first
// baseDepth of them may not be closed inside the range (a chunk of records);
// with baseDepth 0 the range may close them (the rest of a message). seen
// are the message's counts before lo.
func newRangeScanner(input string, lo, hi int, open []string, baseDepth int, lim scanLimits, seen scanCounts) *scanner {
	return &scanner{
		input: input, base: lo, end: hi, pos: lo, baseDepth: baseDepth, lim: lim, seen: seen,
		open: append(make([]string, 0, 8), open...),
	}
}

// reuse makes s a scanner of the whole input, as newScanner, keeping the
// memory of its buffers (a pooled scratch's scanner).
func (s *scanner) reuse(input string, lim scanLimits) {
	*s = scanner{input: input, end: len(input), lim: lim, attrBuf: s.attrBuf[:0], buf: s.buf[:0], open: s.open[:0]}
}

// offset is the absolute input position after the last token.
func (s *scanner) offset() int {
	if s.dec != nil {
		return s.decBase + int(s.dec.InputOffset())
	}
	return s.pos
}

// path renders the open elements, e.g. "MSG/SCHD/FLTR", for errors that
// have no more precise location.
func (s *scanner) path() string { return strings.Join(s.open, "/") }

// where locates a limit error: inside a record that readTree is reading,
// the record's indexed path and the elements open below it
// (MSG/SCHD/FLTR[7]/GTDT); elsewhere the open elements. A non-empty name
// is appended (the element being opened).
func (s *scanner) where(name string) string {
	p := s.path()
	if s.tree.at != "" && len(s.open) >= s.tree.depth {
		p = strings.Join(append([]string{s.tree.at}, s.open[s.tree.depth:]...), "/")
	}
	if name == "" {
		return p
	}
	if p == "" {
		return name
	}
	return p + "/" + name
}

// next returns the next start tag, end tag or text (kinds tokenStart,
// tokenEnd, tokenText); a start tag's attributes stay valid as token
// documents. Comments, processing instructions and directives are
// skipped. At the end of input it returns io.EOF only if every element was
// closed.
func (s *scanner) next() (token, error) {
	for {
		if s.selfClosed {
			s.selfClosed = false
		} else if err := s.checkStartTag(); err != nil {
			return token{}, err
		}
		s.tokenStart = s.offset()
		if s.tree.at == "" {
			s.attrsUsed = max(s.attrsUsed, len(s.attrBuf))
			s.attrBuf = s.attrBuf[:0]
		}
		tok, err := s.rawToken()
		if errors.Is(err, io.EOF) {
			if len(s.open) > s.baseDepth {
				return token{}, newError(ReasonMalformedXML, s.path(), "unexpected end of input: <%s> not closed", s.open[len(s.open)-1])
			}
			return token{}, io.EOF
		}
		if err != nil {
			return token{}, s.syntaxError(err)
		}
		switch tok.kind {
		case tokenStart:
			if len(s.open) >= s.lim.depth {
				return token{}, newError(ReasonTooDeep, s.path(), "nesting deeper than %d elements", s.lim.depth)
			}
			if err := s.count(tok); err != nil {
				return token{}, err
			}
			s.open = append(s.open, tok.raw)
			end := s.offset()
			s.selfClosed = end >= 2 && s.input[end-2] == '/'
			return tok, nil
		case tokenEnd:
			if len(s.open) <= s.baseDepth || s.open[len(s.open)-1] != tok.raw {
				return token{}, newError(ReasonMalformedXML, s.path(), "closing tag </%s> does not match the open element", tok.raw)
			}
			s.open = s.open[:len(s.open)-1]
			return tok, nil
		case tokenText:
			return tok, nil
		}
	}
}

// count adds a start tag to the message's element and attribute counts.
func (s *scanner) count(t token) error {
	s.seen.elements++
	if s.seen.elements > s.lim.elements {
		return newError(ReasonTooManyElements, s.where(t.raw), "more than %d elements in the message", s.lim.elements)
	}
	if len(t.attr) > s.lim.elementAttributes || s.seen.attributes+len(t.attr) > s.lim.attributes {
		return s.tooManyAttributes(t.raw, len(t.attr))
	}
	s.seen.attributes += len(t.attr)
	return nil
}

// checkStartTag counts the attributes of the start tag at the input
// position, if there is one, before the tokenizer reads it: the tokenizer
// builds a tag's whole attribute list (48 bytes an attribute, about 100 in
// encoding/xml) before it returns the token, so one tag with a million
// attributes would cost tens of megabytes before count could object. Every token starts at
// the position after the previous one, except the end of a self-closing
// tag (next does not call this then).
func (s *scanner) checkStartTag() error {
	pos := s.offset()
	if pos+1 >= s.end || s.input[pos] != '<' {
		return nil
	}
	switch s.input[pos+1] {
	case '/', '!', '?':
		return nil
	}
	limit := min(s.lim.elementAttributes, s.lim.attributes-s.seen.attributes)
	if name, n := countTagAttributes(s.input[pos:s.end], limit); n > limit {
		return s.tooManyAttributes(name, n)
	}
	return nil
}

func (s *scanner) tooManyAttributes(name string, n int) error {
	if n > s.lim.elementAttributes {
		return newError(ReasonTooManyAttributes, s.where(name), "<%s> has more than %d attributes", name, s.lim.elementAttributes)
	}
	return newError(ReasonTooManyAttributes, s.where(name), "more than %d attributes in the message", s.lim.attributes)
}

// countTagAttributes reads the start tag at the beginning of tag ("<NAME
// a="1" …") without allocating and returns its name and its number of
// attributes, counting no further than limit+1. It stops early, and leaves
// the syntax error to the tokenizer, where the tag is not well-formed.
func countTagAttributes(tag string, limit int) (string, int) {
	i := 1
	for i < len(tag) && !isTagNameEnd(tag[i]) {
		i++
	}
	name := tag[1:i]
	n := 0
	for n <= limit {
		for i < len(tag) && isSpace(tag[i]) {
			i++
		}
		if i >= len(tag) || tag[i] == '>' || tag[i] == '/' {
			break
		}
		n++
		for i < len(tag) && tag[i] != '=' && !isTagNameEnd(tag[i]) {
			i++
		}
		for i < len(tag) && isSpace(tag[i]) {
			i++
		}
		if i >= len(tag) || tag[i] != '=' {
			break
		}
		i++
		for i < len(tag) && isSpace(tag[i]) {
			i++
		}
		if i >= len(tag) || (tag[i] != '"' && tag[i] != '\'') {
			break
		}
		closing := strings.IndexByte(tag[i+1:], tag[i])
		if closing < 0 {
			break
		}
		i += closing + 2
	}
	return name, n
}

func (s *scanner) syntaxError(err error) *Error {
	detail := "not well-formed XML"
	if hasTypographicAttributeQuote(s.input) {
		detail = "not well-formed XML (an attribute value is delimited by typographic quotes)"
	}
	return wrapError(ReasonMalformedXML, s.path(), err, "%s", detail)
}

// readTree reads the record (or META, RECS) whose start tag was just
// returned by next, up to and including its end tag, into the arena; at is
// its indexed path for errors. Call resetTree before reading the next
// independent tree. Recursion is bounded by the depth limit, the tree's
// size by the record element limit.
func (s *scanner) readTree(start xml.StartElement, at string) (*node, error) {
	s.tree.at, s.tree.depth, s.tree.elements = at, len(s.open), 0
	n, err := s.readNode(start)
	s.tree.at = ""
	return n, err
}

func (s *scanner) readNode(start xml.StartElement) (*node, error) {
	if s.tree.elements++; s.tree.elements > s.lim.treeElements {
		return nil, newError(ReasonTooManyElements, s.where(""), "more than %d elements in one <%s>", s.lim.treeElements, s.open[s.tree.depth-1])
	}
	n := s.nodes.alloc()
	n.name, n.attrs, n.start = qualified(start.Name), start.Attr, s.tokenStart
	for _, a := range start.Attr {
		if len(a.Value) > s.lim.valueBytes {
			return nil, newError(ReasonValueTooLong, s.where("")+"@"+qualified(a.Name), "attribute value of %d bytes, more than %d", len(a.Value), s.lim.valueBytes)
		}
	}
	for {
		tok, err := s.next()
		if err != nil {
			return nil, unexpectedEOF(err, s)
		}
		switch tok.kind {
		case tokenStart:
			child, err := s.readNode(tok.start())
			if err != nil {
				return nil, err
			}
			n.append(child)
		case tokenText:
			if n.addText(tok.text) && n.textLongerThan(s.lim.valueBytes) {
				return nil, newError(ReasonValueTooLong, s.where(""), "text of <%s> is longer than %d bytes", n.name, s.lim.valueBytes)
			}
		case tokenEnd:
			n.endText()
			n.end = s.offset()
			return n, nil
		}
	}
}

// resetTree releases every node read so far for reuse.
// The attribute buffer is not: the tree's own start tag, returned by next
// before this call, keeps its attributes there (next empties the buffer
// when it is called outside readTree).
func (s *scanner) resetTree() { s.nodes.reset() }

// skip consumes the rest of the element whose start tag was just returned.
func (s *scanner) skip() error {
	depth := len(s.open)
	for len(s.open) >= depth {
		if _, err := s.next(); err != nil {
			return unexpectedEOF(err, s)
		}
	}
	return nil
}

func unexpectedEOF(err error, s *scanner) error {
	if errors.Is(err, io.EOF) {
		return newError(ReasonMalformedXML, s.path(), "unexpected end of input")
	}
	return err
}

func qualified(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// hasTypographicAttributeQuote reports whether an attribute value seems to be
// delimited by curly quotes (GTNO=“1”), to make the syntax error precise.
func hasTypographicAttributeQuote(raw string) bool {
	for _, q := range []string{"=\u201c", "=\u201d", "=\u2018", "=\u2019", "= \u201c", "= \u201d"} {
		if strings.Contains(raw, q) {
			return true
		}
	}
	return false
}
