package pump

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/snapshot"
	"github.com/flightfeed/flightfeed/internal/store"
)

// The failure matrix of processing rules R9, row by row.
func TestClassify(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		verdict Verdict
		reason  string
	}{
		{"illegal message", &sis.Error{Reason: "MALFORMED_XML", Class: sis.ClassIllegal}, VerdictDead, "MALFORMED_XML"},
		{"RECS mismatch", fmt.Errorf("decode: %w", &sis.Error{Reason: "RECS_MISMATCH", Class: sis.ClassIllegal}), VerdictDead, "RECS_MISMATCH"},
		{"over capacity", &sis.Error{Reason: "RECS_OUT_OF_RANGE", Class: sis.ClassIllegal}, VerdictDead, "RECS_OUT_OF_RANGE"},
		{"unsupported type", &sis.Error{Reason: "UNSUPPORTED_TYPE", Class: sis.ClassUnsupported}, VerdictUnsupported, "UNSUPPORTED_TYPE"},
		{"day mismatch", fmt.Errorf("x: %w", &snapshot.Rejection{Reason: snapshot.ReasonDayMismatch}), VerdictDead, snapshot.ReasonDayMismatch},
		{"CAS conflict", fmt.Errorf("apply: %w", pumpdata.ErrConflict), VerdictConflict, "CAS_CONFLICT"},
		{"row written as new exists", fmt.Errorf("finish: %w: %w", pumpdata.ErrNotNew, &pgconn.PgError{Code: "23505"}), VerdictConflict, ReasonInfra},
		{"fenced", fmt.Errorf("begin: %w", pumpdata.ErrFenced), VerdictFenced, ReasonInfra},
		{"database down", errors.New("dial tcp 127.0.0.1:5432: connection refused"), VerdictInfra, ReasonInfra},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, VerdictInfra, ReasonInfra},
		{"check violation", fmt.Errorf("write: %w", &pgconn.PgError{Code: "23514"}), VerdictDead, ReasonDataRejected},
		{"day set-once trigger", &pgconn.PgError{Code: "FF001"}, VerdictDead, ReasonDataRejected},
		{"index row too large", fmt.Errorf("write: %w", &pgconn.PgError{Code: "54000", Message: "index row size 2760 exceeds btree version 4 maximum 2704"}), VerdictDead, ReasonDataRejected},
		{"statement too complex", &pgconn.PgError{Code: "54001"}, VerdictDead, ReasonDataRejected},
		{"engine refuses command", fmt.Errorf("merge: %w", flight.ErrInvalidCommand), VerdictDead, ReasonDataRejected},
		{"panic while applying", fmt.Errorf("batch: %w", &panicError{stage: "applying", value: "boom"}), VerdictDead, ReasonInternal},
		{"typed time unparsable at write", fmt.Errorf("flight 1 SODT: %w", flight.ErrBadSISTime), VerdictDead, ReasonDataRejected},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, r := Classify(c.err, store.Answers{})
			if v != c.verdict || r != c.reason {
				t.Fatalf("Classify = (%d, %s), want (%d, %s)", v, r, c.verdict, c.reason)
			}
		})
	}
}

// How the snapshot attempts of a batch that did not commit are traced (seed
// R5.6): ROLLED_BACK, unless its COMMIT failed without an answer that
// says it did not commit (COMMIT_UNKNOWN); flagged with what stopped it.
func TestAttemptTrace(t *testing.T) {
	reset := errors.New("read tcp 127.0.0.1:5432: connection reset by peer")
	cases := []struct {
		name     string
		err      error
		atCommit bool
		stop     error
		result   string
		flag     string
	}{
		{"a write failed", reset, false, nil, pumpdata.TraceRolledBack, ""},
		{"the server refused the COMMIT", fmt.Errorf("commit: %w", &pgconn.PgError{Code: "40001"}), true, nil, pumpdata.TraceRolledBack, ""},
		{"the COMMIT was answered ROLLBACK", fmt.Errorf("commit: %w", pgx.ErrTxCommitRollback), true, nil, pumpdata.TraceRolledBack, ""},
		{"the connection broke during the COMMIT", fmt.Errorf("commit: %w", reset), true, nil, pumpdata.TraceCommitUnknown, ""},
		{"stopped while a write waited", fmt.Errorf("write: %w", context.Canceled), false, context.Canceled, pumpdata.TraceRolledBack, FlagShutdown},
		{"stopped while the COMMIT waited", fmt.Errorf("commit: %w", context.Canceled), true, context.Canceled, pumpdata.TraceCommitUnknown, FlagShutdown},
		{"fenced while the COMMIT waited", fmt.Errorf("commit: %w", context.Canceled), true, fmt.Errorf("renew: %w", pumpdata.ErrFenced),
			pumpdata.TraceCommitUnknown, FlagFenced},
		{"fenced while a write waited", context.Canceled, false, pumpdata.ErrFenced, pumpdata.TraceRolledBack, FlagFenced},
		{"the store refused the COMMIT for the epoch", fmt.Errorf("commit: %w", pumpdata.ErrFenced), true, nil, pumpdata.TraceRolledBack, FlagFenced},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			result, flag := AttemptTrace(c.err, c.atCommit, c.stop, store.Answers{})
			if result != c.result || flag != c.flag {
				t.Fatalf("AttemptTrace = (%s, %q), want (%s, %q)", result, flag, c.result, c.flag)
			}
		})
	}
}

// Which errors may make a message DEAD when they repeat on a batch of one:
// server answers about the data, never outages or a broken schema.
func TestRefusalSignature(t *testing.T) {
	cases := []struct {
		name string
		err  error
		sig  string
		ok   bool
	}{
		{"trigger raises", fmt.Errorf("write: %w", &pgconn.PgError{Code: "P0001", Message: "refused"}), "P0001 refused", true},
		{"function error", &pgconn.PgError{Code: "39000", Message: "bad"}, "39000 bad", true},
		{"check violation", &pgconn.PgError{Code: "23514", Message: "c"}, "23514 c", true},
		{"connection refused", errors.New("dial tcp 127.0.0.1:5432: connection refused"), "", false},
		{"backend terminated", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, "", false},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, "", false},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, "", false},
		{"disk full", &pgconn.PgError{Code: "53100"}, "", false},
		{"lock not available", &pgconn.PgError{Code: "55P03"}, "", false},
		{"table missing", &pgconn.PgError{Code: "42P01", Message: "relation \"flight_schd\" does not exist"}, "", false},
		{"permission denied", &pgconn.PgError{Code: "42501"}, "", false},
		{"read-only transaction", &pgconn.PgError{Code: "25006"}, "", false},
		{"internal error", &pgconn.PgError{Code: "XX000"}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sig, ok := RefusalSignature(c.err, store.Answers{})
			if sig != c.sig || ok != c.ok {
				t.Fatalf("RefusalSignature = (%q, %v), want (%q, %v)", sig, ok, c.sig, c.ok)
			}
		})
	}
}

func TestBackoffGrowsWithJitterAndCap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	initial, maxDelay := 100*time.Millisecond, 2*time.Second
	for attempt, ceiling := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		3: 400 * time.Millisecond, 5: 1600 * time.Millisecond, 6: 2 * time.Second, 50: 2 * time.Second} {
		for range 100 {
			d := Backoff(attempt, initial, maxDelay, r)
			if d < ceiling/2 || d > ceiling {
				t.Fatalf("attempt %d: %s outside [%s, %s]", attempt, d, ceiling/2, ceiling)
			}
		}
	}
}
