package sis

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// scanner streams tokens with encoding/xml's RawToken (no namespace
// translation, the fastest path) and adds what RawToken leaves out: start/end
// matching, unclosed elements at EOF, a depth bound. It reads element
// subtrees into an arena that is reused record after record, so memory stays
// bounded by the largest record, not the message.
type scanner struct {
	// input is the raw message; text values are substrings of it whenever
	// the decoded text equals the raw bytes (no entities, no CDATA, no CR),
	// which saves one allocation per value.
	input string
	// base is where the scanned range starts in input; baseDepth is how many
	// elements (the first entries of open) are open outside the range.
	base      int
	baseDepth int
	dec       *xml.Decoder
	maxDepth  int
	open      []string // names of the open elements, root first
	nodes     arena
}

func newScanner(input string, maxDepth int) *scanner {
	return newRangeScanner(input, 0, len(input), nil, 0, maxDepth)
}

// newRangeScanner scans input[lo:hi] as content of the elements named in
// open (copied), so depth limits, paths, text sharing and syntax-error line
// numbers are exactly those of a scan of the whole input. The first
// baseDepth of them may not be closed inside the range (a chunk of records);
// with baseDepth 0 the range may close them (the rest of a message).
func newRangeScanner(input string, lo, hi int, open []string, baseDepth, maxDepth int) *scanner {
	dec := xml.NewDecoder(strings.NewReader(input[lo:hi]))
	dec.Strict = true
	// DecodeString has made the input UTF-8 already (toUTF8), so the XML
	// declaration's encoding (encoding="GBK" …) is not applied a second
	// time; encoding/xml still rejects invalid UTF-8.
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	return &scanner{
		input: input, base: lo, baseDepth: baseDepth, dec: dec, maxDepth: maxDepth,
		open: append(make([]string, 0, 8), open...),
	}
}

// offset is the absolute input position after the last token.
func (s *scanner) offset() int { return s.base + int(s.dec.InputOffset()) }

// path renders the open elements, e.g. "MSG/SCHD/FLTR", for errors that
// have no more precise location.
func (s *scanner) path() string { return strings.Join(s.open, "/") }

// next returns the next StartElement, EndElement or CharData; CharData is
// only valid until the following call (use text to keep it). Comments,
// processing instructions and directives are skipped. At the end of input it
// returns io.EOF only if every element was closed.
func (s *scanner) next() (xml.Token, error) {
	for {
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
			if len(s.open) >= s.maxDepth {
				return nil, newError(ReasonTooDeep, s.path(), "nesting deeper than %d elements", s.maxDepth)
			}
			s.open = append(s.open, qualified(t.Name))
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

// readTree reads the element whose start tag was just returned by next, up
// to and including its end tag, into the arena. Call resetTree before
// reading the next independent tree. Recursion is bounded by maxDepth.
func (s *scanner) readTree(start xml.StartElement) (*node, error) {
	n := s.nodes.alloc()
	n.name, n.attrs = qualified(start.Name), start.Attr
	for {
		tok, err := s.next()
		if err != nil {
			return nil, unexpectedEOF(err, s)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			child, err := s.readTree(t)
			if err != nil {
				return nil, err
			}
			n.append(child)
		case xml.CharData:
			n.addText(s, t)
		case xml.EndElement:
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
