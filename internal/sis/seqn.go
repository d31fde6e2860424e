package sis

import (
	"errors"
	"fmt"
	"sync"
)

// MaxSeqn is the largest SEQN; the next one wraps to 1 (SIS §2 metadata).
const MaxSeqn Seqn = 999_999

// Seqn is a META sequence number, 1–999999, written as six digits.
type Seqn uint32

// ErrBadSeqn is wrapped by parse failures of a SEQN.
var ErrBadSeqn = errors.New("bad SEQN")

// Next returns the sequence number after s: 999999 (or anything out of
// range) wraps to 1, and the zero value's successor is 1.
func (s Seqn) Next() Seqn {
	if s >= MaxSeqn {
		return 1
	}
	return s + 1
}

// String formats s as six digits ("000042").
func (s Seqn) String() string { return fmt.Sprintf("%06d", uint32(s)) }

// parseSeqn reads an inbound SEQN: 1 to 6 ASCII digits. Zero is accepted
// (some senders start there); the pump only compares sequence numbers.
func parseSeqn(s string) (Seqn, error) {
	if !allDigits(s) || len(s) > 6 {
		return 0, fmt.Errorf("%w: want 1 to 6 decimal digits", ErrBadSeqn)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return Seqn(n), nil
}

// SeqnGenerator hands out outbound SEQNs, wrapping 999999 → 1. It is safe
// for concurrent use. Seed it with the last SEQN sent (persisted by the
// caller) so a restart continues the sequence.
type SeqnGenerator struct {
	mu   sync.Mutex
	last Seqn
}

// NewSeqnGenerator starts after last (0 = start at 1).
func NewSeqnGenerator(last Seqn) *SeqnGenerator { return &SeqnGenerator{last: last} }

// Next returns the next SEQN and remembers it.
func (g *SeqnGenerator) Next() Seqn {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.last = g.last.Next()
	return g.last
}

// Last returns the most recently issued SEQN (or the seed).
func (g *SeqnGenerator) Last() Seqn {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}
