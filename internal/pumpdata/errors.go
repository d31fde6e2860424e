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
