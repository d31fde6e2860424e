package store

import (
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// What a database error says about the message whose write caused it. The
// SQLSTATE knowledge lives here, with the driver, so the pump decides on
// these answers without importing one.

// RefusesData reports a server error that refuses the data itself and
// will refuse it every time: data exceptions (SQLSTATE class 22),
// integrity violations (23), program limits (54: an index row or a
// statement too large for the server, e.g. "index row size exceeds btree
// maximum") and FlightFeed's own guards (FF).
func RefusesData(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return false
	}
	switch pgErr.Code[:2] {
	case "22", "23", "54", "FF":
		return true
	}
	return false
}

// isUniqueViolation reports a server error for a key that already exists.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// AnswerSignature identifies a server answer that may be about the
// message (a trigger refusing it, a function failing on it), for the
// pump's rule that the same answer repeated on one message is a refusal.
// ok is false for errors that must never count so, however often they
// repeat: anything that is not an answer of the server (a dropped
// connection, a timeout), and answers that say the server, the schema or
// the session is unwell rather than the message — connection (08),
// transaction rollback (40), insufficient resources (53), object not in
// prerequisite state (55, locks), operator intervention (57), system
// errors (58), undefined or forbidden objects (42), authorization (28),
// catalog and schema names (3D, 3F), invalid transaction states (25),
// unsupported features (0A), configuration (F0), foreign data (HV),
// snapshot failures (72) and internal errors (XX). A missing table must
// block the head, not make every message DEAD one by one.
func AnswerSignature(err error) (signature string, ok bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return "", false
	}
	switch pgErr.Code[:2] {
	case "08", "40", "53", "55", "57", "58", "42", "28", "3D", "3F", "25", "0A", "F0", "HV", "72", "XX":
		return "", false
	}
	return pgErr.Code + " " + pgErr.Message, true
}

// IsServerAnswer reports whether err is an error the database server sent
// (so it was reachable), as opposed to a connection or protocol failure.
func IsServerAnswer(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

// CommitRefused reports an error of Tx.Commit that says for sure the
// transaction did not commit: the server answered COMMIT with an error (a
// deferred constraint, a serialization failure) or with ROLLBACK (the
// transaction had failed before). Any other error — the connection broke,
// the context ended while the COMMIT waited — leaves the outcome unknown:
// the server may have committed.
func CommitRefused(err error) bool {
	return IsServerAnswer(err) || errors.Is(err, pgx.ErrTxCommitRollback)
}

// AnswerOf is what err says about the message whose write caused it,
// from the four readings above: the pump's failure matrix decides on it
// (pumpdata.Answer) without importing a driver.
func AnswerOf(err error) pumpdata.Answer {
	sig, _ := AnswerSignature(err)
	return pumpdata.Answer{Server: IsServerAnswer(err), RefusesData: RefusesData(err), Signature: sig,
		CommitRefused: CommitRefused(err)}
}

// Answers reads errors for the pump (its Answers port): AnswerOf as a
// method, for the pump's PostgreSQL adapter and for its in-memory test
// store, whose tests inject the driver's errors.
type Answers struct{}

// Answer is AnswerOf(err).
func (Answers) Answer(err error) pumpdata.Answer { return AnswerOf(err) }
