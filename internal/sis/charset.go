package sis

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// declaredEncodings are the XML declaration labels (lower case) whose bytes
// the decoder reads when a message is not UTF-8. GBK is a superset of
// GB2312, so GB2312 text decodes the same with it.
var declaredEncodings = map[string]encoding.Encoding{
	"gbk": simplifiedchinese.GBK, "gb2312": simplifiedchinese.GBK, "cp936": simplifiedchinese.GBK,
	"ms936": simplifiedchinese.GBK, "windows-936": simplifiedchinese.GBK, "x-gbk": simplifiedchinese.GBK,
	"euc-cn": simplifiedchinese.GBK, "csgb2312": simplifiedchinese.GBK, "gb_2312-80": simplifiedchinese.GBK,
	"gb18030":    simplifiedchinese.GB18030,
	"iso-8859-1": charmap.ISO8859_1, "iso8859-1": charmap.ISO8859_1, "iso_8859-1": charmap.ISO8859_1,
	"latin1": charmap.ISO8859_1, "latin-1": charmap.ISO8859_1, "l1": charmap.ISO8859_1,
	"cp819": charmap.ISO8859_1, "ibm819": charmap.ISO8859_1, "csisolatin1": charmap.ISO8859_1,
	"windows-1252": charmap.Windows1252, "cp1252": charmap.Windows1252, "x-cp1252": charmap.Windows1252,
}

// toUTF8 returns the message as UTF-8 text.
//
// Bytes that are valid UTF-8 are UTF-8, whatever the XML declaration says:
// the mailbox adapter has MySQL convert the column to UTF-8, so a body
// written as GBK arrives converted while its declaration still says
// encoding="GBK". Only bytes that are not valid UTF-8 (an unconverted
// column) are decoded with the declared encoding; no declaration, or one
// that says UTF-8, leaves them to the tokenizer, which rejects them as
// MALFORMED_XML.
func toUTF8(raw string) (string, error) {
	if utf8.ValidString(raw) {
		return raw, nil
	}
	if strings.HasPrefix(raw, "\xFF\xFE") || strings.HasPrefix(raw, "\xFE\xFF") {
		return "", newError(ReasonBadEncoding, "", "UTF-16 (byte order mark % X) is not supported; the mailbox must hold UTF-8", raw[:2])
	}
	label := declaredEncoding(raw)
	name := strings.ToLower(label)
	if name == "" || name == "utf-8" || name == "utf8" {
		return raw, nil
	}
	enc, ok := declaredEncodings[name]
	if !ok {
		return "", newError(ReasonBadEncoding, "", "the message is not valid UTF-8 and its declared encoding %q is not supported", label)
	}
	text, err := decodeStrict(raw, enc)
	if err != nil {
		return "", wrapError(ReasonBadEncoding, "", err, "the message is neither valid UTF-8 nor valid %s, the encoding its XML declaration names", label)
	}
	return text, nil
}

// decodeStrict decodes raw with enc and fails on bytes that are not valid
// in it. x/text decoders write U+FFFD for such bytes instead of failing, so
// every U+FFFD in the result is checked against the input: it is genuine
// only where the input holds U+FFFD's own encoding (GB18030 has one).
func decodeStrict(raw string, enc encoding.Encoding) (string, error) {
	text, err := enc.NewDecoder().String(raw)
	if err != nil {
		return "", fmt.Errorf("decode: %w", err)
	}
	encoder := enc.NewEncoder()
	replacement, replacementErr := encoder.String(string(utf8.RuneError))
	at := 0 // offset in raw of text[:done]
	for done := 0; ; {
		i := strings.IndexRune(text[done:], utf8.RuneError)
		if i < 0 {
			return text, nil
		}
		before, err := encoder.String(text[done : done+i])
		if err != nil {
			return "", fmt.Errorf("re-encode: %w", err)
		}
		at += len(before)
		if replacementErr != nil || !strings.HasPrefix(raw[at:], replacement) {
			return "", fmt.Errorf("invalid byte sequence at offset %d (% X)", at, raw[at:min(at+4, len(raw))])
		}
		at += len(replacement)
		done += i + utf8.RuneLen(utf8.RuneError)
	}
}

// declaredEncoding returns the encoding label of the XML declaration that
// starts raw, or "" when there is none.
func declaredEncoding(raw string) string {
	head := raw[:min(len(raw), 512)] // a declaration is short; never scan the body
	if len(head) < 6 || !strings.HasPrefix(head, "<?xml") || !isSpace(head[5]) {
		return ""
	}
	decl, _, closed := strings.Cut(head[5:], "?>")
	if !closed {
		return ""
	}
	_, rest, found := strings.Cut(decl, "encoding")
	if !found {
		return ""
	}
	rest = strings.TrimLeft(rest, " \t\r\n")
	if !strings.HasPrefix(rest, "=") {
		return ""
	}
	rest = strings.TrimLeft(rest[1:], " \t\r\n")
	if rest == "" || (rest[0] != '"' && rest[0] != '\'') {
		return ""
	}
	value, _, ok := strings.Cut(rest[1:], rest[:1])
	if !ok {
		return ""
	}
	return strings.TrimSpace(value)
}
