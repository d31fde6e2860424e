package pumpdata

import (
	"bytes"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// PrefetchRequest names what a batch of messages will need to read.
type PrefetchRequest struct {
	// MessageIDs of the batch, for their processing states.
	MessageIDs []int64
	// IdentityKeys of the decoded messages, for re-sent copy detection,
	// looked up among messages received since Since.
	IdentityKeys []string
	Since        time.Time
	// FLIDs the batch's increments and deletions touch, and how many state
	// versions they may need at most.
	FLIDs    []flight.FLID
	Versions int
	// Cache, when set, holds states committed by this writer: flights in
	// it are checked by version instead of loaded.
	Cache *StateCache
}

// PriorCopy is the latest processed message with an identity key.
type PriorCopy struct {
	MessageID int64
	// Digest is its content digest (Result.ContentDigest).
	Digest     []byte
	ReceivedAt time.Time
}

// Prefetched is everything a batch reads, fetched in one round trip.
type Prefetched struct {
	States map[int64]ProcState
	Priors map[string]PriorCopy
	Set    *engine.WorkingSet
}

// ProcState is what proc_state knows about one mailbox row.
type ProcState struct {
	Status   string
	Reason   string
	Note     string
	Attempts int
	Finished time.Time
	// ReceivedAt and Digest identify the message the row id stood for.
	ReceivedAt time.Time
	Digest     []byte
}

// Same reports whether a mailbox row with this received time and payload
// digest is the message this state records. Mailbox ids alone are not an
// identity: they restart after a TRUNCATE, a restore or a reset
// AUTO_INCREMENT, and a row with a known id but another received time or
// payload is a new message (see RetireReusedIDs).
func (p ProcState) Same(received time.Time, digest []byte) bool {
	return p.ReceivedAt.Equal(received) && bytes.Equal(p.Digest, digest)
}

// Terminal reports a state that is final for the row.
func (p ProcState) Terminal() bool {
	return p.Status == StatusSucceeded || p.Status == StatusSkipped || p.Status == StatusDead
}
