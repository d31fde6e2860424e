package flight

import (
	"errors"
	"fmt"
	"strings"
)

// MaxSequenceDigits bounds an item's sequence attribute (GTNO, CKNO, …). The
// protocol's resource limits are two digits; nine leave room and fit an int.
const MaxSequenceDigits = 9

// ErrBadSequence is the sentinel wrapped by every ParseSequence failure.
var ErrBadSequence = errors.New("bad sequence attribute")

// sequenceQuotes are typographic quotes real feeds leave around sequence
// values (CLNO="”1”"); they are cut before the digits are read.
const sequenceQuotes = "\"'\u201c\u201d\u2018\u2019\u00ab\u00bb"

// ParseSequence reads an item's sequence attribute. Surrounding white space
// and typographic quotes are tolerated (the Item keeps the original string);
// what remains must be 1 to MaxSequenceDigits ASCII digits. "0" (and "00") is
// the protocol's clear marker.
func ParseSequence(s string) (int, error) {
	t := strings.Trim(strings.TrimSpace(s), sequenceQuotes)
	t = strings.TrimSpace(t)
	if t == "" {
		return 0, fmt.Errorf("%w: %q has no digits", ErrBadSequence, s)
	}
	if len(t) > MaxSequenceDigits {
		return 0, fmt.Errorf("%w: %q has more than %d digits", ErrBadSequence, s, MaxSequenceDigits)
	}
	n := 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q is not a decimal number", ErrBadSequence, s)
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}
