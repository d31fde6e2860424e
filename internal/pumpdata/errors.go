package pumpdata

import (
	"errors"
)

// ErrFenced means the caller's fencing epoch is no longer the current one:
// another pump took over, and this transaction must not commit.
var ErrFenced = errors.New("fencing epoch superseded by a newer pump")

// ErrConflict means a snapshot's compare-and-set on the day's version lost;
// the message is retried from a fresh read.
var ErrConflict = errors.New("snapshot version compare-and-set conflict")

// ErrNotNew means a row written as new (ArchivedRow.New, Result.New)
// already existed: something outside the pump wrote or kept it. Nothing
// was written; the batch is to be retried with upserts.
var ErrNotNew = errors.New("a message written as new is already in the database")

// Answer is what an error of the feed's database says about the message
// whose write caused it (the pump's Answers port): the driver's SQLSTATE
// knowledge stays with the store, the pump's failure matrix decides on
// these four facts.
type Answer struct {
	// Server: the database server sent the error, so it was reachable (not
	// a connection or protocol failure).
	Server bool
	// RefusesData: the server refuses the data itself and will refuse it
	// every time (the message is DEAD, DATA_REJECTED).
	RefusesData bool
	// Signature identifies a server answer that may be about the message,
	// for the rule that the same answer repeated on one message is a
	// refusal; empty for errors that must never count so, however often
	// they repeat (outages; a server, schema or session unwell).
	Signature string
	// CommitRefused: as an error of COMMIT, it says for sure the
	// transaction did not commit (otherwise its outcome is unknown).
	CommitRefused bool
}
