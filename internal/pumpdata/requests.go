package pumpdata

import (
	"strings"
	"time"
)

// Request states (req_track.status).
const (
	RequestPending   = "PENDING"
	RequestCompleted = "COMPLETED"
	RequestExpired   = "EXPIRED"
	RequestTimedOut  = "TIMED_OUT"
	// RequestFailed: the answers to the day's requests were refused the
	// same way twice in a row (snapshot.AnswerRefusal); the day is not asked
	// for again until an operator re-requests it.
	RequestFailed = "FAILED"
)

// RequestKindRQRD names the reference-data requests as a whole (the
// lists asked for: Store.AskedSince); each list's requests are of its own
// kind, ReferenceRequestKind.
const RequestKindRQRD = "RQRD"

// referenceRequestPrefix starts the kind of a reference-data request.
const referenceRequestPrefix = RequestKindRQRD + ":"

// ReferenceRequestKind is the kind of the reference-data requests (RQRD)
// for the list of SIS TYPE typ: RQRD:GLST. One kind per list, so each list
// has its own live request.
func ReferenceRequestKind(typ string) string { return referenceRequestPrefix + typ }

// ReferenceRequestType is the SIS TYPE a reference-data request's kind
// asks for, and whether kind is one.
func ReferenceRequestType(kind string) (string, bool) {
	return strings.CutPrefix(kind, referenceRequestPrefix)
}

// Request is one outbound request: a full-day request (RQFD) for Day, or
// a reference-data request (RQRD, Kind ReferenceRequestKind) for a whole
// list, whose Day is "".
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
	// Rejections counts the identical refusals in a row the answers to
	// this day's requests met (carried from the request this one follows
	// unless that one was answered or re-requested by an operator);
	// Rejection is the refusal (reason code: detail).
	Rejections int
	Rejection  string
}

// RequestSettlement is what befell a live request (Tx.SettleRequest):
// Status COMPLETED (answered by message MessageID) or TIMED_OUT (no
// answer in time) ends it; a refused answer (message MessageID, Rejection
// its refusal, Rejections the identical refusals in a row) keeps it
// PENDING, or ends it FAILED when it was given up.
type RequestSettlement struct {
	Status     string
	MessageID  int64
	Rejections int
	Rejection  string
}

// FailedRequest is a day whose full-day request FAILED and that no
// operator re-requested since: the pump does not ask for it.
type FailedRequest struct {
	Day string
	// Rejection is the refusal its answers met (reason code: detail),
	// MessageID the last refused answer.
	Rejection string
	MessageID int64
	FailedAt  time.Time
}

// AskedDays is what the request ledger says of the horizon's days
// (Store.AskedSince): Asked had a request sent or answered at or after the
// time asked, Failed are held (FAILED, not re-requested), by day.
type AskedDays struct {
	Asked  map[string]bool
	Failed map[string]FailedRequest
}
