package mailbox

import (
	"context"
	"database/sql"
	_ "embed"
	"fmt"
	"strings"
	"time"
)

// The mailbox in its default layout (schema.sql, processing rules R2.2): its DDL and
// the one way to write an inbound row into it as the AODB does. Tests, the
// demo and `flightfeed simulate --create-mailbox` use them; in production
// the AODB side owns the tables and writes the rows.

//go:embed schema.sql
var schema string

// DDL returns the default layout's CREATE TABLE statements, one per
// element, each safe to run again (IF NOT EXISTS).
func DDL() []string {
	// Comments go first: they may hold semicolons of their own.
	var lines []string
	for _, line := range strings.Split(schema, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
			lines = append(lines, line)
		}
	}
	var out []string
	for _, stmt := range strings.Split(strings.Join(lines, "\n"), ";") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			out = append(out, stmt)
		}
	}
	return out
}

// Execer runs a statement: a *sql.DB, *sql.Conn or *sql.Tx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// CreateTables applies DDL to db. Its errors are the driver's, wrapped:
// a caller holding a DSN scrubs them of its password.
func CreateTables(ctx context.Context, db Execer) error {
	for _, stmt := range DDL() {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("create mailbox tables: %w", err)
		}
	}
	return nil
}

// Inbound is one row of the default inbound table as the AODB writes it:
// the status and every other column keep their defaults (VALID, not
// processed).
type Inbound struct {
	// Received is CMINMSGS_DATE_RECEIVED, written in UTC; the zero time
	// leaves it to the column's default, the server's clock
	// (CURRENT_TIMESTAMP(3), the same for every row of one statement).
	Received time.Time
	// Body is CMINMSGS_CLOB_MSG, sent as it is (bytes that are not UTF-8
	// reach a binary column unchanged).
	Body string
	// Null writes SQL NULL as the body instead (Body is ignored): a row
	// the AODB broke, for a table whose body column allows it.
	Null bool
}

// WriteInbound inserts rows into the default inbound table of db with one
// statement, in the order given (ids rise with it), and returns the first
// row's id. A caller with many rows passes them in slices small enough
// for the server's max_allowed_packet.
func WriteInbound(ctx context.Context, db Execer, rows ...Inbound) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	var q strings.Builder
	q.WriteString("INSERT INTO CMINMSGS (CMINMSGS_DATE_RECEIVED, CMINMSGS_CLOB_MSG) VALUES ")
	args := make([]any, 0, 2*len(rows))
	for i, r := range rows {
		if i > 0 {
			q.WriteString(", ")
		}
		if r.Received.IsZero() {
			q.WriteString("(DEFAULT, ?)")
		} else {
			q.WriteString("(?, ?)")
			args = append(args, r.Received.UTC())
		}
		if r.Null {
			args = append(args, nil)
		} else {
			args = append(args, r.Body)
		}
	}
	res, err := db.ExecContext(ctx, q.String(), args...)
	if err != nil {
		return 0, fmt.Errorf("insert %d inbound mailbox row(s): %w", len(rows), err)
	}
	// For a statement of several rows the server reports the first's id.
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("insert %d inbound mailbox row(s): %w", len(rows), err)
	}
	return id, nil
}
