package sis

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The scanner's tokenizer. It reads the input string in place and yields
// exactly the tokens encoding/xml's RawToken yields in Strict mode (names,
// attributes, character data, comments, processing instructions), refuses
// exactly the inputs RawToken refuses, with the same error text and line
// number, and leaves the input position (offset) where RawToken's
// InputOffset would be. Names, attribute values and text are substrings of
// the input unless entities or carriage returns make the decoded text
// differ from the raw bytes; attributes go to a slice the scanner reuses.
// encoding/xml copies every name and value and boxes every token, which
// was most of a FLOP's decode time and garbage.
//
// Two rare constructs are not implemented here: directives (<!DOCTYPE …>,
// <!ENTITY …>) and names with non-ASCII characters (whose validity needs
// encoding/xml's Unicode tables). On meeting one, the scanner hands the rest
// of its range, from the start of that token, to encoding/xml (fallback),
// which then yields every further token; RawToken keeps no state from one
// token to the next that this would lose.

// tokenKind says what a token is.
type tokenKind uint8

const (
	tokenStart tokenKind = iota + 1
	tokenEnd
	tokenText
	tokenComment
	tokenProcInst
	tokenDirective
)

// token is one markup item. name is an element's (or a processing
// instruction's target, in Local), raw the element's qualified name as
// written. attr is valid until the scanner reuses its attribute buffer:
// until next is called outside readTree (see scanner.attrBuf). text is
// character data (decoded), or the content of a comment, a processing
// instruction or a directive.
type token struct {
	kind tokenKind
	raw  string
	name xml.Name
	attr []xml.Attr
	text string
}

func (t token) start() xml.StartElement { return xml.StartElement{Name: t.name, Attr: t.attr} }

// errUnsupported: the tokenizer met a construct it leaves to encoding/xml.
var errUnsupported = errors.New("construct left to encoding/xml")

// rawToken returns the next token as RawToken would, through the fallback
// decoder once one was started.
func (s *scanner) rawToken() (token, error) {
	if s.err != nil {
		return token{}, s.err
	}
	tok, err := s.nextRaw()
	if err != nil && !errors.Is(err, io.EOF) {
		s.err = err // a failed scan stays failed, as encoding/xml's does
	}
	return tok, err
}

func (s *scanner) nextRaw() (token, error) {
	if s.dec != nil {
		return s.fallbackToken()
	}
	if s.needClose {
		s.needClose = false
		return token{kind: tokenEnd, raw: s.closeRaw, name: s.closeName}, nil
	}
	attrs := len(s.attrBuf)
	tok, err := s.lex()
	if errors.Is(err, errUnsupported) {
		s.attrBuf = s.attrBuf[:attrs]
		s.startFallback(s.pos)
		return s.fallbackToken()
	}
	return tok, err
}

// startFallback hands input[at:end] to encoding/xml.
func (s *scanner) startFallback(at int) {
	dec := xml.NewDecoder(strings.NewReader(s.input[at:s.end]))
	dec.Strict = true
	// DecodeString has made the input UTF-8 already (toUTF8), so the XML
	// declaration's encoding (encoding="GBK" …) is not applied a second
	// time; encoding/xml still rejects invalid UTF-8.
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	s.dec, s.decBase = dec, at
}

func (s *scanner) fallbackToken() (token, error) {
	tok, err := s.dec.RawToken()
	if err != nil {
		var syntax *xml.SyntaxError
		if errors.As(err, &syntax) {
			syntax.Line += strings.Count(s.input[:s.decBase], "\n") // the line in the whole message
		}
		return token{}, err
	}
	switch t := tok.(type) {
	case xml.StartElement:
		return token{kind: tokenStart, raw: qualified(t.Name), name: t.Name, attr: t.Attr}, nil
	case xml.EndElement:
		return token{kind: tokenEnd, raw: qualified(t.Name), name: t.Name}, nil
	case xml.CharData:
		end := s.offset()
		text := string(t)
		if start := end - len(t); start >= 0 && s.input[start:end] == string(t) { // a comparison, no copy
			text = s.input[start:end]
		}
		return token{kind: tokenText, text: text}, nil
	case xml.Comment:
		return token{kind: tokenComment, text: string(t)}, nil
	case xml.ProcInst:
		return token{kind: tokenProcInst, name: xml.Name{Local: t.Target}, text: string(t.Inst)}, nil
	case xml.Directive:
		return token{kind: tokenDirective, text: string(t)}, nil
	}
	return token{}, fmt.Errorf("unexpected token %T", tok)
}

// fail is a syntax error at input position p (encoding/xml's line: one
// more than the line feeds before p).
func (s *scanner) fail(p int, msg string) error {
	return &xml.SyntaxError{Msg: msg, Line: 1 + strings.Count(s.input[:p], "\n")}
}

func (s *scanner) eof() error { return s.fail(s.end, "unexpected EOF") }

// lex reads the token at s.pos and moves s.pos past it.
func (s *scanner) lex() (token, error) {
	in, p, end := s.input, s.pos, s.end
	if p >= end {
		return token{}, io.EOF
	}
	if in[p] != '<' {
		text, q, err := s.lexText(p, -1, false)
		if err != nil {
			return token{}, err
		}
		s.pos = q
		return token{kind: tokenText, text: text}, nil
	}
	p++
	if p >= end {
		return token{}, s.eof()
	}
	switch in[p] {
	case '/':
		raw, name, q, err := s.lexName(p+1, "expected element name after </", true)
		if err != nil {
			return token{}, err
		}
		q = s.skipSpace(q)
		if q >= end {
			return token{}, s.eof()
		}
		if q++; in[q-1] != '>' {
			return token{}, s.fail(q, "invalid characters between </"+name.Local+" and >")
		}
		s.pos = q
		return token{kind: tokenEnd, raw: raw, name: name}, nil
	case '?':
		return s.lexProcInst(p + 1)
	case '!':
		return s.lexBang(p + 1)
	}
	return s.lexStart(p)
}

func (s *scanner) lexProcInst(p int) (token, error) {
	in, end := s.input, s.end
	target, _, q, err := s.lexName(p, "expected target name after <?", false)
	if err != nil {
		return token{}, err
	}
	q = s.skipSpace(q)
	i := strings.Index(in[q:end], "?>")
	if i < 0 {
		return token{}, s.eof()
	}
	data := in[q : q+i]
	if target == "xml" {
		if ver := declParam("version", data); ver != "" && ver != "1.0" {
			return token{}, fmt.Errorf("xml: unsupported version %q; only version 1.0 is supported", ver)
		}
		// The declared encoding needs nothing here: DecodeString has
		// converted the input to UTF-8 already (see startFallback).
	}
	s.pos = q + i + 2
	return token{kind: tokenProcInst, name: xml.Name{Local: target}, text: data}, nil
}

// lexBang reads what follows "<!": a comment or a CDATA section (a
// directive is left to encoding/xml).
func (s *scanner) lexBang(p int) (token, error) {
	in, end := s.input, s.end
	if p >= end {
		return token{}, s.eof()
	}
	switch in[p] {
	case '-':
		p++
		if p >= end {
			return token{}, s.eof()
		}
		if p++; in[p-1] != '-' {
			return token{}, s.fail(p, "invalid sequence <!- not part of <!--")
		}
		i := strings.Index(in[p:end], "--")
		if i < 0 || p+i+2 >= end {
			return token{}, s.eof()
		}
		if in[p+i+2] != '>' {
			return token{}, s.fail(p+i+3, `invalid sequence "--" not allowed in comments`)
		}
		s.pos = p + i + 3
		return token{kind: tokenComment, text: in[p : p+i]}, nil
	case '[':
		p++
		for i := 0; i < len("CDATA["); i++ {
			if p >= end {
				return token{}, s.eof()
			}
			if p++; in[p-1] != "CDATA["[i] {
				return token{}, s.fail(p, "invalid <![ sequence")
			}
		}
		text, q, err := s.lexText(p, -1, true)
		if err != nil {
			return token{}, err
		}
		s.pos = q
		return token{kind: tokenText, text: text}, nil
	}
	return token{}, errUnsupported
}

// lexStart reads a start tag from its name at p; its attributes are
// appended to s.attrBuf.
func (s *scanner) lexStart(p int) (token, error) {
	in, end := s.input, s.end
	raw, name, p, err := s.lexName(p, "expected element name after <", true)
	if err != nil {
		return token{}, err
	}
	first := len(s.attrBuf)
	empty := false
	for {
		p = s.skipSpace(p)
		if p >= end {
			return token{}, s.eof()
		}
		c := in[p]
		p++
		if c == '/' {
			if p >= end {
				return token{}, s.eof()
			}
			if p++; in[p-1] != '>' {
				return token{}, s.fail(p, "expected /> in element")
			}
			empty = true
			break
		}
		if c == '>' {
			break
		}
		p--
		_, aname, q, err := s.lexName(p, "expected attribute name in element", true)
		if err != nil {
			return token{}, err
		}
		q = s.skipSpace(q)
		if q >= end {
			return token{}, s.eof()
		}
		if q++; in[q-1] != '=' {
			return token{}, s.fail(q, "attribute name without = in element")
		}
		q = s.skipSpace(q)
		if q >= end {
			return token{}, s.eof()
		}
		quote := in[q]
		q++
		if quote != '"' && quote != '\'' {
			return token{}, s.fail(q, "unquoted or missing attribute value in element")
		}
		value, q, err := s.lexText(q, int(quote), false)
		if err != nil {
			return token{}, err
		}
		s.attrBuf = append(s.attrBuf, xml.Attr{Name: aname, Value: value})
		p = q
	}
	s.pos = p
	attr := s.attrBuf[first:len(s.attrBuf):len(s.attrBuf)]
	if empty {
		s.needClose, s.closeRaw, s.closeName = true, raw, name
	}
	return token{kind: tokenStart, raw: raw, name: name, attr: attr}, nil
}

func (s *scanner) skipSpace(p int) int {
	for p < s.end && isSpace(s.input[p]) {
		p++
	}
	return p
}

// lexName reads the name at p as encoding/xml's name (ns false) or nsname
// (ns true) does; missing is the error when there is none.
func (s *scanner) lexName(p int, missing string, ns bool) (string, xml.Name, int, error) {
	in, end := s.input, s.end
	if p >= end {
		return "", xml.Name{}, p, s.eof()
	}
	if c := in[p]; c < utf8.RuneSelf && !isNameByte(c) {
		return "", xml.Name{}, p, s.fail(p, missing)
	}
	q := p
	colons := 0
	for ; q < end; q++ {
		c := in[q]
		if c >= utf8.RuneSelf {
			return "", xml.Name{}, p, errUnsupported
		}
		if !isNameByte(c) {
			break
		}
		if c == ':' {
			colons++
		}
	}
	if q >= end {
		return "", xml.Name{}, p, s.eof()
	}
	raw := in[p:q]
	if c := raw[0]; c == '-' || c == '.' || ('0' <= c && c <= '9') {
		return "", xml.Name{}, p, s.fail(q, "invalid XML name: "+raw)
	}
	if !ns {
		return raw, xml.Name{Local: raw}, q, nil
	}
	if colons > 1 {
		return "", xml.Name{}, p, s.fail(q, missing)
	}
	name := xml.Name{Local: raw}
	if colons == 1 {
		if space, local, _ := strings.Cut(raw, ":"); space != "" && local != "" {
			name = xml.Name{Space: space, Local: local}
		}
	}
	return raw, name, q, nil
}

// isNameByte is encoding/xml's: the ASCII bytes a name may hold.
func isNameByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '_' || c == ':' || c == '.' || c == '-'
}

// textPlain marks the bytes lexText copies without a second look: ASCII
// characters that are valid XML and neither markup, a quote, a carriage
// return nor '>' (the end of "]]>").
var textPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range "<&>\r\"'" {
		t[c] = false
	}
	t['\t'], t['\n'] = true, true
	return t
}()

// lexText reads character data from p as encoding/xml's text does: up to
// '<' (not consumed) or the end, up to and including the quote when quote
// >= 0 (an attribute value), or to and including "]]>" in a CDATA section.
// It decodes entities and turns "\r\n" and "\r" into "\n"; the result is a
// substring of the input when nothing needed decoding. Invalid UTF-8 and
// characters XML forbids are reported when the text is complete, as
// encoding/xml does (a syntax error further on takes precedence).
func (s *scanner) lexText(p, quote int, cdata bool) (string, int, error) {
	in, end := s.input, s.end
	start := p
	seg := p // the raw bytes from seg on are not yet in s.buf
	copying := false
	var bad rune // the first character that makes the text invalid
	badUTF8, hasBad := false, false
	textEnd := -1
	for textEnd < 0 {
		for p < end && textPlain[in[p]] {
			p++
		}
		if p >= end {
			if cdata {
				return "", p, s.fail(end, "unexpected EOF in CDATA section")
			}
			textEnd = end
			break
		}
		c := in[p]
		switch {
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(in[p:end])
			if !hasBad {
				if r == utf8.RuneError && size == 1 {
					hasBad, badUTF8 = true, true
				} else if !inCharacterRange(r) {
					hasBad, bad = true, r
				}
			}
			p += size
		case c == '>':
			p++
			// encoding/xml forgets the bytes before an entity here, but
			// an entity ends with ';': it cannot make a "]]".
			if quote < 0 && p-3 >= start && in[p-2] == ']' && in[p-3] == ']' {
				if !cdata {
					return "", p, s.fail(p, "unescaped ]]> not in CDATA section")
				}
				textEnd = p - 3
			}
		case c == '<' && !cdata:
			if quote >= 0 {
				return "", p, s.fail(p+1, "unescaped < inside quoted string")
			}
			textEnd = p
		case quote >= 0 && int(c) == quote:
			textEnd = p
			p++
		case c == '&' && !cdata:
			if !copying {
				s.buf, copying = s.buf[:0], true
			}
			s.buf = append(s.buf, in[seg:p]...)
			r, q, err := s.lexEntity(p)
			if err != nil {
				return "", q, err
			}
			s.buf = utf8.AppendRune(s.buf, r) // a surrogate becomes U+FFFD, as with string(rune(n))
			if r > unicode.MaxRune || (0xD800 <= r && r <= 0xDFFF) {
				r = utf8.RuneError
			}
			if !hasBad && !inCharacterRange(r) {
				hasBad, bad = true, r
			}
			p, seg = q, q
		case c == '\r':
			if !copying {
				s.buf, copying = s.buf[:0], true
			}
			s.buf = append(append(s.buf, in[seg:p]...), '\n')
			p++
			if p < end && in[p] == '\n' {
				p++
			}
			seg = p
		case c < 0x20:
			if !hasBad {
				hasBad, bad = true, rune(c)
			}
			p++
		default: // a quote that does not end this text, '&' or '<' in CDATA
			p++
		}
	}
	if hasBad {
		if badUTF8 {
			return "", p, s.fail(p, "invalid UTF-8")
		}
		return "", p, s.fail(p, fmt.Sprintf("illegal character code %U", bad))
	}
	if !copying {
		return in[start:textEnd], p, nil
	}
	if textEnd > seg {
		s.buf = append(s.buf, in[seg:textEnd]...)
	}
	return string(s.buf), p, nil
}

// lexEntity reads the reference at p ('&') and returns its character and
// the position after it.
func (s *scanner) lexEntity(p int) (rune, int, error) {
	in, end := s.input, s.end
	q := p + 1
	if q >= end {
		return 0, q, s.eof()
	}
	if in[q] == '#' {
		if q++; q >= end {
			return 0, q, s.eof()
		}
		base := 10
		if in[q] == 'x' {
			if base, q = 16, q+1; q >= end {
				return 0, q, s.eof()
			}
		}
		digits := q
		for q < end && (in[q] >= '0' && in[q] <= '9' || base == 16 && ('a' <= in[q] && in[q] <= 'f' || 'A' <= in[q] && in[q] <= 'F')) {
			q++
		}
		if q >= end {
			return 0, q, s.eof()
		}
		if in[q] != ';' {
			return 0, q, s.fail(q, "invalid character entity "+in[p:q]+" (no semicolon)")
		}
		n, err := strconv.ParseUint(in[digits:q], base, 64)
		q++
		if err != nil || n > unicode.MaxRune {
			return 0, q, s.fail(q, "invalid character entity "+in[p:q])
		}
		return rune(n), q, nil
	}
	for q < end && (in[q] >= utf8.RuneSelf || isNameByte(in[q])) {
		q++
	}
	if q >= end {
		return 0, q, s.eof()
	}
	if in[q] != ';' {
		return 0, q, s.fail(q, "invalid character entity "+in[p:q]+" (no semicolon)")
	}
	q++
	switch in[p+1 : q-1] {
	case "lt":
		return '<', q, nil
	case "gt":
		return '>', q, nil
	case "amp":
		return '&', q, nil
	case "apos":
		return '\'', q, nil
	case "quot":
		return '"', q, nil
	}
	return 0, q, s.fail(q, "invalid character entity "+in[p:q])
}

// inCharacterRange is XML's Char production.
func inCharacterRange(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// declParam returns the value of param="…" (or '…') in an XML declaration's
// content, scanning as encoding/xml does ("" when absent).
func declParam(param, s string) string {
	param += "="
	i := 0
	var sep byte
	for i < len(s) {
		sub := s[i:]
		k := strings.Index(sub, param)
		if k < 0 || len(param)+k >= len(sub) {
			return ""
		}
		i += len(param) + k + 1
		if c := sub[len(param)+k]; c == '\'' || c == '"' {
			sep = c
			break
		}
	}
	if sep == 0 {
		return ""
	}
	j := strings.IndexByte(s[i:], sep)
	if j < 0 {
		return ""
	}
	return s[i : i+j]
}
