package pump

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/flightfeed/flightfeed/internal/backoff"
	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// Verdict is what the failure matrix (processing rules R9) says to do
// with a message whose processing returned an error.
type Verdict uint8

const (
	// VerdictDead means: terminal, release the head at once (illegal input, over
	// capacity, day mismatch, data the database refuses).
	VerdictDead Verdict = iota + 1
	// VerdictUnsupported means: FAILED(UNSUPPORTED), retried up to the limit, then
	// DEAD; the head waits meanwhile.
	VerdictUnsupported
	// VerdictConflict means: snapshot CAS lost; roll back and retry at once.
	VerdictConflict
	// VerdictInfra means: FAILED(INFRA), roll back and retry with backoff; the
	// head is blocked.
	VerdictInfra
	// VerdictFenced means: this pump is no longer the writer; stop.
	VerdictFenced
)

// Reason codes the pump adds to the decoder's and the snapshot rules'.
const (
	ReasonInfra        = "INFRA"
	ReasonDataRejected = "DATA_REJECTED"
	ReasonDuplicate    = "DUPLICATE"
	ReasonUnsupported  = "UNSUPPORTED"
	// ReasonEmptyBody: the mailbox row's body column is NULL.
	ReasonEmptyBody = "EMPTY_BODY"
	// ReasonStateTooLarge: the message would make a flight's state or
	// notice a Kafka record larger than kafka.maxRecordBytes, which the
	// topics would refuse for good (engine.TooLarge says which flight,
	// which field and how large).
	ReasonStateTooLarge = "STATE_TOO_LARGE"
	// ReasonNotApplied: a message of a type the interface defines that
	// FlightFeed does not apply (sis.NotAppliedTypes): SKIPPED at once.
	ReasonNotApplied = "NOT_APPLIED"
	// ReasonInternal: decoding or applying the message panicked (a bug of
	// FlightFeed); the message changed nothing, the stack is in the log.
	ReasonInternal = "INTERNAL"
)

// Flags recorded beside a result (proc_state.flags, trace log).
const (
	FlagSeqnRegression = "SEQN_REGRESSION"
	FlagSeqnReuse      = "SEQN_REUSE"
	FlagDayMismatch    = "DAY_MISMATCH"
	// FlagDuplicateKey: a reference-data message carried a key twice; the
	// later record was applied.
	FlagDuplicateKey = "DUPLICATE_KEY"
	// FlagImplausibleTime: a CNCL, NAAT or NEAT farther than
	// history.plausibleWindow from its flight's day (kept, ignored by the
	// history sweep).
	FlagImplausibleTime = "IMPLAUSIBLE_TIME"
)

// Trace flags of a snapshot attempt whose batch was stopped: another pump
// took the feed (FENCED), or the pump was stopped (SHUTDOWN).
const (
	FlagFenced   = "FENCED"
	FlagShutdown = "SHUTDOWN"
)

// AttemptTrace decides how the snapshot attempts of a batch that did not
// commit are traced (processing rules R5.6: one row per attempt, whatever its fate),
// from the batch's error, whether that error is its COMMIT's own, and why
// the pump's context ended (stop; nil while it runs). The result is
// ROLLED_BACK, or COMMIT_UNKNOWN when the COMMIT failed without an answer
// that says it did not commit (the server may have committed: the next
// start resolves it); the flag says what stopped the batch: FENCED, SHUTDOWN
// or nothing. db says what the database's errors mean (the Store). Pure,
// like Classify.
func AttemptTrace(err error, atCommit bool, stop error, db Answers) (result, flag string) {
	fenced := errors.Is(err, pumpdata.ErrFenced)
	switch {
	case fenced || errors.Is(stop, pumpdata.ErrFenced):
		flag = FlagFenced
	case stop != nil:
		flag = FlagShutdown
	}
	// A fencing refusal is the store's before anything is sent; a server
	// answer to COMMIT says it rolled back.
	if atCommit && !fenced && !db.Answer(err).CommitRefused {
		return pumpdata.TraceCommitUnknown, flag
	}
	return pumpdata.TraceRolledBack, flag
}

// Classify maps an error to its verdict and reason code; db says what the
// database's errors mean (the Store). It is pure: the whole failure matrix
// is this function and its table test.
func Classify(err error, db Answers) (Verdict, string) {
	var rej *snapshot.Rejection
	var sisErr *sis.Error
	var tooLarge *engine.TooLarge
	var panicked *panicError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &panicked):
		return VerdictDead, ReasonInternal
	case errors.Is(err, pumpdata.ErrFenced):
		return VerdictFenced, ReasonInfra
	case errors.As(err, &rej):
		return VerdictDead, rej.Reason
	case errors.As(err, &tooLarge):
		return VerdictDead, ReasonStateTooLarge
	case errors.As(err, &sisErr):
		if sisErr.Class == sis.ClassUnsupported {
			return VerdictUnsupported, string(sisErr.Reason)
		}
		return VerdictDead, string(sisErr.Reason)
	case errors.Is(err, pumpdata.ErrConflict):
		return VerdictConflict, "CAS_CONFLICT"
	case errors.Is(err, pumpdata.ErrNotNew):
		// Not the message's fault: the retry upserts (Pump.upsertOnly).
		return VerdictConflict, ReasonInfra
	case errors.Is(err, flight.ErrInvalidCommand), errors.Is(err, flight.ErrBadSISTime):
		return VerdictDead, ReasonDataRejected
	case db.Answer(err).RefusesData:
		// The database refused the data itself; retrying cannot help.
		return VerdictDead, ReasonDataRejected
	default:
		return VerdictInfra, ReasonInfra
	}
}

// RefusalRepeats is how many times in a row the same server error on a
// batch of one message makes that message DEAD (DATA_REJECTED): the server
// answered, about this message, the same way each time, so retrying it is
// not waiting out an outage.
const RefusalRepeats = 3

// RefusalSignature returns what identifies an error for the repeat rule
// (the database server's answer, as db reads it), and false for errors
// that must never make a message DEAD however often they repeat: outages
// and answers that say the server, the schema or the session is unwell.
func RefusalSignature(err error, db Answers) (string, bool) {
	sig := db.Answer(err).Signature
	return sig, sig != ""
}

// Backoff is the pump's exponential backoff (package backoff): attempt n
// waits between half and all of min(max, initial·2^(n-1)).
func Backoff(attempt int, initial, maxDelay time.Duration, r *rand.Rand) time.Duration {
	return backoff.Delay(attempt, initial, maxDelay, r)
}
