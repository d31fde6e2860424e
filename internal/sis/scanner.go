package sis

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// scanner streams tokens with encoding/xml's RawToken (no namespace
// translation, the fastest path) and adds what RawToken leaves out: start/end
// matching, unclosed elements at EOF, and the decode limits on depth,
// elements, attributes and value length. It reads element subtrees into an
// arena that is reused record after record, so memory stays bounded by the
// largest record, not the message.
type scanner struct {
	// input is the raw message; text values are substrings of it whenever
	// the decoded text equals the raw bytes (no entities, no CDATA, no CR),
	// which saves one allocation per value.
	input string
	// base is where the scanned range starts in input and end where it
	// ends; baseDepth is how many elements (the first entries of open) are
	// open outside the range.
	base      int
	end       int
	baseDepth int
	dec       *xml.Decoder
	lim       scanLimits
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
	dec := xml.NewDecoder(strings.NewReader(input[lo:hi]))
	dec.Strict = true
	// DecodeString has made the input UTF-8 already (toUTF8), so the XML
	// declaration's encoding (encoding="GBK" …) is not applied a second
	// time; encoding/xml still rejects invalid UTF-8.
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	return &scanner{
		input: input, base: lo, end: hi, baseDepth: baseDepth, dec: dec, lim: lim, seen: seen,
		open: append(make([]string, 0, 8), open...),
	}
}

// offset is the absolute input position after the last token.
func (s *scanner) offset() int { return s.base + int(s.dec.InputOffset()) }

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

// next returns the next StartElement, EndElement or CharData; CharData is
// only valid until the following call (use text to keep it). Comments,
// processing instructions and directives are skipped. At the end of input it
// returns io.EOF only if every element was closed.
func (s *scanner) next() (xml.Token, error) {
	for {
		if s.selfClosed {
			s.selfClosed = false
		} else if err := s.checkStartTag(); err != nil {
			return nil, err
		}
		s.tokenStart = s.offset()
		tok, err := s.dec.RawToken()
		if errors.Is(err, io.EOF) {
			if len(s.open) > s.baseDepth {
				return nil, newError(ReasonMalformedXML, s.path(), "unexpected end of input: <%s> not closed", s.open[len(s.open)-1])
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, s.syntaxError(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(s.open) >= s.lim.depth {
				return nil, newError(ReasonTooDeep, s.path(), "nesting deeper than %d elements", s.lim.depth)
			}
			if err := s.count(t); err != nil {
				return nil, err
			}
			s.open = append(s.open, qualified(t.Name))
			end := s.offset()
			s.selfClosed = end >= 2 && s.input[end-2] == '/'
			return tok, nil // the original interface value: re-boxing t would allocate
		case xml.EndElement:
			name := qualified(t.Name)
			if len(s.open) <= s.baseDepth || s.open[len(s.open)-1] != name {
				return nil, newError(ReasonMalformedXML, s.path(), "closing tag </%s> does not match the open element", name)
			}
			s.open = s.open[:len(s.open)-1]
			return tok, nil
		case xml.CharData:
			return tok, nil
		}
	}
}

// count adds a start tag to the message's element and attribute counts.
func (s *scanner) count(t xml.StartElement) error {
	s.seen.elements++
	if s.seen.elements > s.lim.elements {
		return newError(ReasonTooManyElements, s.where(qualified(t.Name)), "more than %d elements in the message", s.lim.elements)
	}
	if len(t.Attr) > s.lim.elementAttributes || s.seen.attributes+len(t.Attr) > s.lim.attributes {
		return s.tooManyAttributes(qualified(t.Name), len(t.Attr))
	}
	s.seen.attributes += len(t.Attr)
	return nil
}

// checkStartTag counts the attributes of the start tag at the input
// position, if there is one, before encoding/xml reads it: encoding/xml
// builds a tag's whole attribute list (about 100 bytes an attribute) before
// it returns the token, so one tag with a million attributes would cost
// hundreds of megabytes before count could object. Every token starts at
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
// the syntax error to encoding/xml, where the tag is not well-formed.
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

// text returns the CharData just returned by next as a string, shared with
// the input when the raw bytes match.
func (s *scanner) text(t xml.CharData) string {
	end := s.offset()
	start := end - len(t)
	if start >= 0 && end <= len(s.input) && s.input[start:end] == string(t) { // compiles to a comparison, no copy
		return s.input[start:end]
	}
	return string(t)
}

func (s *scanner) syntaxError(err error) *Error {
	detail := "not well-formed XML"
	if hasTypographicAttributeQuote(s.input) {
		detail = "not well-formed XML (an attribute value is delimited by typographic quotes)"
	}
	var syntax *xml.SyntaxError
	if s.base > 0 && errors.As(err, &syntax) {
		syntax.Line += strings.Count(s.input[:s.base], "\n") // report the line in the whole message
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
		switch t := tok.(type) {
		case xml.StartElement:
			child, err := s.readNode(t)
			if err != nil {
				return nil, err
			}
			n.append(child)
		case xml.CharData:
			if n.addText(s, t) && n.textLongerThan(s.lim.valueBytes) {
				return nil, newError(ReasonValueTooLong, s.where(""), "text of <%s> is longer than %d bytes", n.name, s.lim.valueBytes)
			}
		case xml.EndElement:
			n.endText()
			n.end = s.offset()
			return n, nil
		}
	}
}

// resetTree releases every node read so far for reuse.
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
