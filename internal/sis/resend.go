package sis

import (
	"crypto/sha256"
	"encoding/xml"
	"strings"
)

// ResendFields are the META fields a re-send of the same message may change
// (seed 000 §5.6, 001 §4.1): the envelope's send time, under either of its
// two tags. The identity SNDR|TYPE|STYP|SEQN names the message; the send
// time only says when this copy left the sender, so an AODB that re-sends
// after a timeout or a restart stamps it anew. Every other META field
// (RCVR, SORC, MGID, RMID, APOT, and any unmapped one) and the whole body
// belong to the message: a difference there is another payload under the
// same identity (SEQN_REUSE), never a copy.
var ResendFields = [...]string{"DDTM", "DTTM"}

// contentDigestDomain keeps a content digest from ever equalling the raw
// text's digest of the same bytes.
const contentDigestDomain = "sis-content-v1\x00"

// contentDigest is the SHA-256 of the message text (after the UTF-8
// conversion, without a leading byte order mark) with every ResendFields
// element of META cut out, tags included — a copy that only moved its send
// time, or wrote it as DTTM instead of DDTM, digests the same. META is
// input[metaStart:metaEnd], already decoded (well-formed).
func contentDigest(input string, metaStart, metaEnd int) []byte {
	h := sha256.New()
	h.Write([]byte(contentDigestDomain))
	h.Write([]byte(input[:metaStart]))
	meta := input[metaStart:metaEnd]
	at := 0
	for _, cut := range sendTimeSpans(meta) {
		h.Write([]byte(meta[at:cut[0]]))
		at = cut[1]
	}
	h.Write([]byte(meta[at:]))
	h.Write([]byte(input[metaEnd:]))
	return h.Sum(nil)
}

// sendTimeSpans returns the byte ranges of META's ResendFields children in
// meta (the <META>…</META> text), in order.
func sendTimeSpans(meta string) [][2]int {
	dec := xml.NewDecoder(strings.NewReader(meta))
	dec.Strict = true
	var spans [][2]int
	depth, start := 0, -1
	for {
		before := int(dec.InputOffset())
		tok, err := dec.RawToken()
		if err != nil {
			return spans // io.EOF: META was decoded before, nothing else can fail
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 && isResendField(qualified(t.Name)) {
				start = before
			}
		case xml.EndElement:
			if depth == 2 && start >= 0 {
				spans = append(spans, [2]int{start, int(dec.InputOffset())})
				start = -1
			}
			depth--
		}
	}
}

func isResendField(name string) bool {
	for _, f := range ResendFields {
		if name == f {
			return true
		}
	}
	return false
}
