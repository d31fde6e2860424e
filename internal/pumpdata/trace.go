package pumpdata

import (
	"time"
)

// Trace log results (schd_snap_log.result).
const (
	TraceCommitted     = "COMMITTED"
	TraceReplaySkipped = "REPLAY_SKIPPED"
	TraceRolledBack    = "ROLLED_BACK"
	// TraceCommitUnknown: the attempt's COMMIT failed without the
	// server's answer (a broken connection, a stop while it waited), so it
	// may have committed or not; TraceEntry.IfCommitted says what it is if
	// it did. The next start resolves it (Store.Start in package pump).
	TraceCommitUnknown = "COMMIT_UNKNOWN"
)

// TraceEntry is one snapshot attempt (processing rules R5.6).
type TraceEntry struct {
	Day                    string
	MessageID              int64
	ReceivedAt             time.Time
	Recs                   int
	OldVersion, NewVersion int64
	DeletedCount           int
	Result                 string
	// IfCommitted is, for a COMMIT_UNKNOWN row, the result the attempt
	// has if its commit went through (TraceCommitted or
	// TraceReplaySkipped); empty otherwise.
	IfCommitted          string
	Flags                []string
	OldDigest, NewDigest string
	Duration             time.Duration
	Detail               string
	// Conflicts are the FLIDs a day mismatch refused (at most
	// MaxTraceConflicts), shown by `flightfeed dead`.
	Conflicts []DayConflict
}

// MaxTraceConflicts bounds the conflicts one trace row keeps: a snapshot of
// thousands of misattributed records is named by its first ones.
const MaxTraceConflicts = 100

// DayConflict is one FLID a snapshot gave another operation day than the one
// its stored row has (processing rules R5.3, SAME_FLID_ACROSS_OPERATION_DAYS).
type DayConflict struct {
	FLID       string `json:"flid"`
	StoredDay  string `json:"stored_day"`
	MessageDay string `json:"message_day"`
}
