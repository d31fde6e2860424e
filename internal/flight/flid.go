package flight

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxFLIDDigits is the longest FLID the SIS interface allows (Number(1-12),
// SIS §3.16.2).
const MaxFLIDDigits = 12

// MaxFLID is the largest FLID that fits in MaxFLIDDigits decimal digits.
const MaxFLID FLID = 999_999_999_999

// FLID is the AODB's flight-instance identifier, the only identity of a flight
// (processing rules R3.1). It is never derived from FLNO or a date.
type FLID uint64

// ErrBadFLID is the sentinel wrapped by every ParseFLID failure.
var ErrBadFLID = errors.New("bad FLID")

// ParseFLID parses the wire form of a FLID: 1 to 12 ASCII decimal digits.
// Leading zeros are accepted ("007" is 7); signs, spaces and anything else are
// rejected.
func ParseFLID(s string) (FLID, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadFLID)
	}
	if len(s) > MaxFLIDDigits {
		return 0, fmt.Errorf("%w: %d digits, at most %d allowed", ErrBadFLID, len(s), MaxFLIDDigits)
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q is not all decimal digits", ErrBadFLID, s)
		}
		v = v*10 + uint64(c-'0')
	}
	return FLID(v), nil
}

// String returns the canonical decimal form (no leading zeros).
func (f FLID) String() string { return strconv.FormatUint(uint64(f), 10) }

// Valid reports whether f fits in MaxFLIDDigits digits.
func (f FLID) Valid() bool { return f <= MaxFLID }
