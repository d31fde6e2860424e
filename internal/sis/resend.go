package sis

import (
	"crypto/sha256"
)

// ResendFields are the META fields a re-send of the same message may change
// (processing rules R5.6, R10.4): the envelope's send time, under either of its
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
// time, or wrote it as DTTM instead of DDTM, digests the same. cuts are
// those elements' ranges in input, in order, as the decoder read them.
func contentDigest(input string, cuts [][2]int) []byte {
	h := sha256.New()
	h.Write([]byte(contentDigestDomain))
	at := 0
	for _, cut := range cuts {
		h.Write([]byte(input[at:cut[0]]))
		at = cut[1]
	}
	h.Write([]byte(input[at:]))
	return h.Sum(nil)
}

func isResendField(name string) bool {
	for _, f := range ResendFields {
		if name == f {
			return true
		}
	}
	return false
}
