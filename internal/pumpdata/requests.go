package pumpdata

import (
	"time"
)

// Request states (req_track.status).
const (
	RequestPending   = "PENDING"
	RequestCompleted = "COMPLETED"
	RequestExpired   = "EXPIRED"
	RequestTimedOut  = "TIMED_OUT"
)

// Request is one outbound full-day request.
type Request struct {
	ID   int64
	Kind string
	Day  string
	// Receiver is whom the request asked (its META/RCVR); "" for requests
	// recorded before it was kept.
	Receiver    string
	Seqn        int
	Status      string
	RequestedAt time.Time
	// SentAt is zero until the request is in the mailbox's outbound table.
	SentAt time.Time
}
