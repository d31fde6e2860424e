package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Which server errors refuse the data itself (DEAD at once), and which
// never count as an answer about the message (outages, a broken schema).
func TestDatabaseErrorClasses(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		refuses  bool
		answerOK bool
	}{
		{"check violation", fmt.Errorf("write: %w", &pgconn.PgError{Code: "23514"}), true, true},
		{"bad datetime", &pgconn.PgError{Code: "22007"}, true, true},
		{"index row too large", &pgconn.PgError{Code: "54000"}, true, true},
		{"own guard", &pgconn.PgError{Code: "FF001"}, true, true},
		{"trigger raises", &pgconn.PgError{Code: "P0001", Message: "refused"}, false, true},
		{"function error", &pgconn.PgError{Code: "39000"}, false, true},
		{"connection refused", errors.New("dial tcp 127.0.0.1:5432: connection refused"), false, false},
		{"backend terminated", &pgconn.PgError{Code: "57P01"}, false, false},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, false, false},
		{"disk full", &pgconn.PgError{Code: "53100"}, false, false},
		{"table missing", &pgconn.PgError{Code: "42P01"}, false, false},
		{"internal", &pgconn.PgError{Code: "XX000"}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := RefusesData(c.err); got != c.refuses {
				t.Errorf("RefusesData = %v, want %v", got, c.refuses)
			}
			if _, ok := AnswerSignature(c.err); ok != c.answerOK {
				t.Errorf("AnswerSignature ok = %v, want %v", ok, c.answerOK)
			}
			var pgErr *pgconn.PgError
			if got := IsServerAnswer(c.err); got != errors.As(c.err, &pgErr) {
				t.Errorf("IsServerAnswer = %v", got)
			}
		})
	}
}
