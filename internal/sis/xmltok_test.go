package sis

import (
	"encoding/xml"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The tokenizer must be encoding/xml's RawToken (Strict) over the input:
// these tests run both over the same inputs and compare every token, the
// offset after it, and the first error (text and line).

// rawTok is one token as both tokenizers report it.
type rawTok struct {
	Kind   tokenKind
	Name   xml.Name
	Attr   []xml.Attr
	Text   string
	Offset int
}

// refTokens reads input[lo:hi] with encoding/xml, offsets and error lines
// counted in the whole input.
func refTokens(input string, lo, hi int) ([]rawTok, string) {
	dec := xml.NewDecoder(strings.NewReader(input[lo:hi]))
	dec.Strict = true
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var out []rawTok
	for {
		tok, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			return out, ""
		}
		if err != nil {
			var syntax *xml.SyntaxError
			if errors.As(err, &syntax) {
				syntax.Line += strings.Count(input[:lo], "\n")
			}
			return out, err.Error()
		}
		r := rawTok{Offset: lo + int(dec.InputOffset())}
		switch t := tok.(type) {
		case xml.StartElement:
			r.Kind, r.Name, r.Attr = tokenStart, t.Name, t.Attr
		case xml.EndElement:
			r.Kind, r.Name = tokenEnd, t.Name
		case xml.CharData:
			r.Kind, r.Text = tokenText, string(t)
		case xml.Comment:
			r.Kind, r.Text = tokenComment, string(t)
		case xml.ProcInst:
			r.Kind, r.Name, r.Text = tokenProcInst, xml.Name{Local: t.Target}, string(t.Inst)
		case xml.Directive:
			r.Kind, r.Text = tokenDirective, string(t)
		}
		if len(r.Attr) == 0 {
			r.Attr = nil
		}
		out = append(out, r)
	}
}

// ourTokens reads input[lo:hi] with the scanner's tokenizer; fellBack
// reports whether it handed over to encoding/xml.
func ourTokens(input string, lo, hi int) (toks []rawTok, errText string, fellBack bool) {
	s := newRangeScanner(input, lo, hi, nil, 0, limitsOf(Options{}.withDefaults()), scanCounts{})
	for {
		tok, err := s.rawToken()
		if errors.Is(err, io.EOF) {
			return toks, "", s.dec != nil
		}
		if err != nil {
			return toks, err.Error(), s.dec != nil
		}
		r := rawTok{Kind: tok.kind, Name: tok.name, Attr: tok.attr, Text: tok.text, Offset: s.offset()}
		if len(r.Attr) == 0 {
			r.Attr = nil
		} else {
			r.Attr = append([]xml.Attr(nil), r.Attr...) // the buffer is reused
		}
		if (tok.kind == tokenStart || tok.kind == tokenEnd) && tok.raw != qualified(tok.name) {
			return toks, "raw name " + tok.raw + " is not " + qualified(tok.name), s.dec != nil
		}
		toks = append(toks, r)
	}
}

// compareTokenizers fails t when the tokenizers disagree on input[lo:hi].
func compareTokenizers(t *testing.T, label, input string, lo, hi int) {
	t.Helper()
	want, wantErr := refTokens(input, lo, hi)
	got, gotErr, _ := ourTokens(input, lo, hi)
	if diff := cmp.Diff(want, got); diff != "" || wantErr != gotErr {
		t.Fatalf("%s [%d:%d] %q:\ntokens (-encoding/xml +ours):\n%s\nerror encoding/xml %q\nerror ours         %q", label, lo, hi, clip(input[lo:hi]), diff, wantErr, gotErr)
	}
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:300] + " … " + s[len(s)-300:]
	}
	return s
}

// tokenizerCorpus is every XML input the package's and the pump's tests
// keep on disk, plus the fuzz seeds.
func tokenizerCorpus(t testing.TB) map[string]string {
	corpus := map[string]string{}
	for _, pattern := range []string{"testdata/*.xml", "testdata/interface/*.xml", "../pump/testdata/hostile/*.xml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			corpus[f] = string(b)
		}
	}
	seeds, err := filepath.Glob("testdata/fuzz/*/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range seeds {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n")[1:] {
			for _, prefix := range []string{"[]byte(", "string("} {
				if v, ok := strings.CutPrefix(line, prefix); ok {
					if s, err := strconv.Unquote(strings.TrimSuffix(v, ")")); err == nil {
						corpus[f+"#"+strconv.Itoa(i)] = s
					}
				}
			}
		}
	}
	for i, s := range tokenizerCases {
		corpus["case#"+strconv.Itoa(i)] = s
	}
	if len(corpus) < 100 {
		t.Fatalf("corpus has %d inputs: the test data moved?", len(corpus))
	}
	return corpus
}

// tokenizerCases are the corners of RawToken, each well-formed or not.
var tokenizerCases = []string{
	"", " ", "<", "<a", "<a>", "<a/>", "<a />", "<a/ >", "<a></a>", "<a></a >", "<a></a x>", "</a>", "</>", "</ a>", "</a",
	"<a:b/>", "<a:b:c/>", "<:a/>", "<a:/>", "<a b:c:d='1'/>", "<a xmlns:x='u' x:y='2'/>", "</a:b>", "</a:b:c>",
	"<1a/>", "<-a/>", "<.a/>", "<_a.b-c/>", "<é/>", "<aé/>", "<a bé='1'/>", "</é>", "<\xff/>", "<a\xff/>",
	`<a b="1" c='2'/>`, `<a b="1"c="2"/>`, `<a b = "1" />`, `<a b/>`, `<a b=/>`, `<a b=1/>`, `<a b="1/>`, `<a b="<"/>`, `<a b="a>b"/>`,
	`<a b="]]>"/>`, `<a b="&amp;&lt;&gt;&quot;&apos;"/>`, `<a b="&#65;&#x42;"/>`, `<a b="&bogus;"/>`, `<a b="&amp"/>`, "<a b=\"x\ry\r\nz\"/>",
	"<a b=\"\t\n\"/>", "<a b=\"\x01\"/>", "<a b=\"\xff\"/>", "<a b='\"'/>", `<a b="'"/>`, `<a b=“1”/>`,
	"a", "a<b/>", "&amp;", "&", "&;", "&#;", "&#x;", "&#65", "&#65;", "&#x41;", "&#X41;", "&#xD800;", "&#0;", "&#x10FFFF;", "&#x110000;",
	"&#99999999999999999999999;", "&lt", "&lt;", "&LT;", "&é;", "&a\xff;", "&#x1F;", "&#xFFFE;", "&#9;&#10;&#13;", "x&amp;y&#10;\r\n\r",
	"\r", "\r\n", "\n\r", "\r\r\n", "a\r", "a\rb\r\nc", "&amp;\n", "\r&amp;\n", "]]>", "]]", "]>", "]&amp;]>", "] ]>", "a]]>b",
	"\x00", "\x01", "\x7f", "\u0085", "\uFFFD", "\uFFFE", "\uFFFF", "\U0010FFFF", "\xff", "\xe4\xb8", "\xe4\xb8<a/>", "\xed\xa0\x80", "中文",
	"<![CDATA[x]]>", "<![CDATA[]]>", "<![CDATA[<&>]]>", "<![CDATA[a]]]]><![CDATA[>]]>", "<![CDATA[\r\n\r]]>", "<![CDATA[x", "<![CDATA", "<![CDAT[x]]>",
	"<![", "<![CDATA[\xff]]>", "<![CDATA[\x01]]>", "<![CDATA[]]]>",
	"<!---->", "<!-- a -->", "<!--a--b-->", "<!-- a --->", "<!--->", "<!--", "<!-- a", "<!-a-->", "<!", "<!-", "<!-- \xff \x01 -->",
	"<?xml version=\"1.0\"?>", "<?xml version=\"1.1\"?>", "<?xml version='2.0' encoding='GBK'?>", "<?xml encoding=\"UTF-8\"?>",
	"<?xml?>", "<?xml ?>", "<?pi data?>", "<?pi data", "<?pi", "<??>", "<?1pi?>", "<?a:b:c x?>", "<?pi ?? >?>", "<?xml version=1.1?>",
	"<?xml versionx=\"1.1\" version=\"1.0\"?>", "<?é?>", "<?pi \xff?>",
	"<!DOCTYPE a>", "<!DOCTYPE a [<!ENTITY e 'x'>]><a/>", "<!DOCTYPE a [<!-- c -->]><a>&e;</a>", "<!ELEMENT", "<!x>",
	"<a><b>t</b><c/>x</a>", "<a>\n\t<b>1</b>\n</a>\n", "<a><é>x</é><b c='&amp;'>y</b></a>",
}

// TestTokenizerMatchesEncodingXML: every corpus input and the corner
// cases, whole and from every token boundary on (the range scanners start
// at one), tokenize as encoding/xml does.
func TestTokenizerMatchesEncodingXML(t *testing.T) {
	for name, input := range tokenizerCorpus(t) {
		compareTokenizers(t, name, input, 0, len(input))
		toks, _ := refTokens(input, 0, len(input))
		for i, tok := range toks {
			if i%7 == 0 || len(toks) < 50 {
				compareTokenizers(t, name, input, tok.Offset, len(input))
			}
		}
	}
}

// TestTokenizerMatchesEncodingXMLMutated: the corpus with random edits
// that hit the tokenizer's corners (fixed seed: the same inputs every run).
func TestTokenizerMatchesEncodingXMLMutated(t *testing.T) {
	corpus := tokenizerCorpus(t)
	names := make([]string, 0, len(corpus))
	for name := range corpus {
		names = append(names, name)
	}
	rng := rand.New(rand.NewSource(1))
	rounds := 40
	if testing.Short() {
		rounds = 5
	}
	for _, name := range names {
		for range rounds {
			input := mutateXML(rng, corpus[name])
			compareTokenizers(t, name+" (mutated)", input, 0, len(input))
		}
	}
}

// xmlSnippets are what mutateXML inserts.
var xmlSnippets = []string{
	"&amp;", "&lt;", "&#x41;", "&#65;", "&#0;", "&#xD800;", "&bogus;", "&amp", "&", "&#", "\r\n", "\r", "\n", "]]>", "]]",
	"<![CDATA[x]]>", "<![CDATA[", "<!--c-->", "<!-- - -->", "--", "<?xml version=\"1.1\"?>", "<?pi d?>", "<!DOCTYPE x>", "<!",
	"\xff", "\x01", "\x00", "é", "\uFFFE", "<a:b:c>", "<é/>", "'", "\"", "<", ">", "/>", "/", "=", " ", "\t", ":", "<x>", "</x>",
	"<x/>", `a="1"`, ` b='2'`, "?>", "<?", "中",
}

func mutateXML(rng *rand.Rand, s string) string {
	for range 1 + rng.Intn(3) {
		at := 0
		if len(s) > 0 {
			at = rng.Intn(len(s) + 1)
		}
		switch rng.Intn(5) {
		case 0, 1:
			s = s[:at] + xmlSnippets[rng.Intn(len(xmlSnippets))] + s[at:]
		case 2:
			s = s[:at] + s[min(len(s), at+1+rng.Intn(8)):]
		case 3:
			s = s[:at]
		case 4:
			if at < len(s) {
				b := []byte(s)
				const bytes = "<>&;'\"/=!?-[] \r\nx:#\xff"
				b[at] = bytes[rng.Intn(len(bytes))]
				s = string(b)
			}
		}
	}
	return s
}

// FuzzTokenizer compares the tokenizers over arbitrary input, whole and
// from a token boundary on.
func FuzzTokenizer(f *testing.F) {
	for _, input := range tokenizerCorpus(f) {
		if len(input) < 2000 {
			f.Add(input, uint16(0))
		}
	}
	f.Fuzz(func(t *testing.T, input string, from uint16) {
		compareTokenizers(t, "fuzz", input, 0, len(input))
		if toks, _ := refTokens(input, 0, len(input)); len(toks) > 0 {
			compareTokenizers(t, "fuzz", input, toks[int(from)%len(toks)].Offset, len(input))
		}
	})
}

// TestTokenizerFallsBackToEncodingXML: a directive or a non-ASCII name is
// handed to encoding/xml from that token on, and the scan goes on to the
// same tokens and errors.
func TestTokenizerFallsBackToEncodingXML(t *testing.T) {
	for _, input := range []string{
		`<!DOCTYPE MSG><MSG><A>1</A></MSG>`,
		`<MSG><A>1</A><!DOCTYPE x [<!ENTITY e "v">]><B>&amp;</B></MSG>`,
		`<MSG><车>1</车><B b="&lt;"/></MSG>`,
		`<MSG><A 属性="1"/>text</MSG>`,
		"<MSG>\n<A>1</A>\n<é>\n</MSG>", // mismatched after the fallback: same error, same line
		"<MSG>\n<A>1</A>\n<!DOCTYPE>\n<B>&bogus;</B></MSG>",
	} {
		want, wantErr := refTokens(input, 0, len(input))
		got, gotErr, fellBack := ourTokens(input, 0, len(input))
		if !fellBack {
			t.Errorf("%q: no fallback", input)
		}
		if diff := cmp.Diff(want, got); diff != "" || wantErr != gotErr {
			t.Errorf("%q: (-encoding/xml +ours)\n%s\n%q / %q", input, diff, wantErr, gotErr)
		}
	}
	// The interface's own messages never need it.
	files, err := filepath.Glob("testdata/interface/*.xml")
	if err != nil || len(files) == 0 {
		t.Fatal("no interface corpus", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, fellBack := ourTokens(string(b), 0, len(b)); fellBack {
			t.Errorf("%s falls back to encoding/xml", f)
		}
	}
}

// BenchmarkTokenizeFLOP reads the tokens of the interface corpus's FLOPs
// with the scanner's tokenizer and with encoding/xml's RawToken, in the
// same run.
func BenchmarkTokenizeFLOP(b *testing.B) {
	files, err := filepath.Glob("testdata/interface/*-FLOP-*.xml")
	if err != nil || len(files) == 0 {
		b.Fatal("no FLOPs", err)
	}
	var inputs []string
	size := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		inputs = append(inputs, string(raw))
		size += len(raw)
	}
	b.Run("ours", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		lim := limitsOf(Options{}.withDefaults())
		for b.Loop() {
			for _, in := range inputs {
				s := newScanner(in, lim)
				for {
					s.attrBuf = s.attrBuf[:0]
					if _, err := s.rawToken(); err != nil {
						if !errors.Is(err, io.EOF) {
							b.Fatal(err)
						}
						break
					}
				}
			}
		}
	})
	b.Run("encoding-xml", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, in := range inputs {
				dec := xml.NewDecoder(strings.NewReader(in))
				dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
				for {
					if _, err := dec.RawToken(); err != nil {
						if !errors.Is(err, io.EOF) {
							b.Fatal(err)
						}
						break
					}
				}
			}
		}
	})
}

// TestScannerKeepsTreeAttributes: the attributes of a tree's start tag,
// returned by next before readTree (and resetTree) is called, and of its
// descendants, all stay intact while the tree is read: they share the
// scanner's attribute buffer.
func TestScannerKeepsTreeAttributes(t *testing.T) {
	s := newScanner(`<MSG x="0"><R a="1" b="2"><C c="3"><D d="4" e="&amp;"/></C><C c="5"/></R><R a="6"><C c="7"/></R></MSG>`, limitsOf(Options{}.withDefaults()))
	attrs := func(n *node) string {
		var b strings.Builder
		for _, a := range n.attrs {
			b.WriteString(qualified(a.Name) + "=" + a.Value + " ")
		}
		return n.name + "[" + strings.TrimSpace(b.String()) + "]"
	}
	var got []string
	var walk func(n *node)
	walk = func(n *node) {
		got = append(got, attrs(n))
		for c := n.first; c != nil; c = c.next {
			walk(c)
		}
	}
	for {
		tok, err := s.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if tok.kind == tokenStart && tok.raw == "R" {
			s.resetTree()
			n, err := s.readTree(tok.start(), "MSG/R")
			if err != nil {
				t.Fatal(err)
			}
			walk(n)
		}
	}
	want := []string{"R[a=1 b=2]", "C[c=3]", "D[d=4 e=&]", "C[c=5]", "R[a=6]", "C[c=7]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("attributes (-want +got):\n%s", diff)
	}
}
