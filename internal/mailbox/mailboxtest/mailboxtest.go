// Package mailboxtest gives each test a fresh MariaDB/MySQL database on
// the local server, optionally holding the SIS mailbox tables of the
// default layout (mailbox.DDL), and drops it when the test ends; it writes
// inbound rows as the AODB would (Write, PutRows: mailbox.WriteInbound,
// the one writer) and reads back what the pump wrote. Test support:
// product code never imports it (depguard in .golangci.yml).
package mailboxtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/testsupport"
)

// ServerEnv names the variable holding the admin DSN of the test server.
const ServerEnv = "FLIGHTFEED_TEST_MYSQL"

// DefaultServer is the machine's MariaDB (root, empty password).
const DefaultServer = "root@tcp(127.0.0.1:3306)/"

// Server returns the admin DSN of the test server.
func Server() string {
	if dsn := os.Getenv(ServerEnv); dsn != "" {
		return dsn
	}
	return DefaultServer
}

// New creates an empty database and returns a DSN for it (parseTime on,
// UTC). The database is dropped when t ends.
func New(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := mysql.ParseDSN(Server())
	if err != nil {
		t.Fatalf("mailboxtest: parse %s: %v", Server(), err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("mailboxtest: open: %v", err)
	}
	defer func() { _ = admin.Close() }()
	name := testsupport.DatabaseName(t)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("mailboxtest: create database %s: %v (is MariaDB running? `bash hack/services.sh` starts it)", name, err)
	}
	t.Cleanup(func() {
		// A fresh context on purpose: the test's own may be cancelled.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Errorf("mailboxtest: drop %s: %v", name, err)
			return
		}
		defer func() { _ = db.Close() }()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("mailboxtest: drop %s: %v", name, err)
		}
	})
	cfg.DBName = name
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	return cfg.FormatDSN()
}

// NewMailbox creates a database holding the default SIS mailbox tables
// (mailbox.DDL) and returns its DSN.
func NewMailbox(t testing.TB) string {
	t.Helper()
	dsn := New(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("mailboxtest: open: %v", err)
	}
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := mailbox.CreateTables(ctx, db); err != nil {
		t.Fatalf("mailboxtest: %v", err)
	}
	return dsn
}

// Results lists every inbound mailbox row of the default layout with what
// the pump wrote back, one line per row in id order ("ID processed=BOOL
// RESULT NOTE"), for comparing two runs and for failure messages.
func Results(t testing.TB, db *sql.DB) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT CMINMSGS_ID, CMINMSGS_DATE_PROCESSED IS NOT NULL,
		coalesce(CMINMSGS_PROC_RESULT, ''), coalesce(CMINMSGS_PROC_NOTE, '') FROM CMINMSGS ORDER BY CMINMSGS_ID`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var b strings.Builder
	for rows.Next() {
		var id int64
		var processed bool
		var result, note string
		if err := rows.Scan(&id, &processed, &result, &note); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d processed=%v %s %s\n", id, processed, result, note)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// WithUser creates a MariaDB user (name prefix plus random letters) with
// password and every privilege on dsn's database, and returns dsn as that
// user. The user is dropped when t ends. The security tests use it to put
// a marker into a mailbox password the server checks.
func WithUser(t testing.TB, dsn, prefix, password string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("mailboxtest: parse %s: %v", dsn, err)
	}
	admin, err := sql.Open("mysql", Server())
	if err != nil {
		t.Fatalf("mailboxtest: open: %v", err)
	}
	defer func() { _ = admin.Close() }()
	user := prefix + strings.ToLower(rand.Text()[:6])
	t.Cleanup(func() {
		// A fresh context on purpose: the test's own may be cancelled.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db, err := sql.Open("mysql", Server())
		if err != nil {
			t.Errorf("mailboxtest: drop user %s: %v", user, err)
			return
		}
		defer func() { _ = db.Close() }()
		if _, err := db.ExecContext(ctx, "DROP USER IF EXISTS '"+user+"'@'%', '"+user+"'@'localhost'"); err != nil {
			t.Errorf("mailboxtest: drop user %s: %v", user, err)
		}
	})
	for _, host := range []string{"%", "localhost"} {
		for _, stmt := range []string{
			"CREATE USER '" + user + "'@'" + host + "' IDENTIFIED BY '" + strings.ReplaceAll(password, "'", "''") + "'",
			"GRANT ALL ON `" + cfg.DBName + "`.* TO '" + user + "'@'" + host + "'",
		} {
			if _, err := admin.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("mailboxtest: create user %s: %v", user, err)
			}
		}
	}
	cfg.User, cfg.Passwd = user, password
	return cfg.FormatDSN()
}

// PutRows inserts the rows into the default mailbox table of db as the
// AODB would, row i received at base + i ms (the same for every world fed
// the same rows, so their results compare), fifty to a statement; name
// says whose mailbox in a failure.
func PutRows(t testing.TB, db *sql.DB, name string, rows []string, base time.Time) {
	t.Helper()
	for from := 0; from < len(rows); from += 50 {
		to := min(from+50, len(rows))
		chunk := make([]mailbox.Inbound, 0, to-from)
		for i := from; i < to; i++ {
			chunk = append(chunk, mailbox.Inbound{Received: base.Add(time.Duration(i) * time.Millisecond), Body: rows[i]})
		}
		if _, err := mailbox.WriteInbound(context.Background(), db, chunk...); err != nil {
			t.Fatalf("%s: insert mailbox rows %d–%d: %v", name, from, to-1, err)
		}
	}
}

// Write inserts rows into the default inbound table of db as the AODB
// would (mailbox.WriteInbound: one statement, in order) and returns the
// first row's id; an error fails t.
func Write(t testing.TB, db mailbox.Execer, rows ...mailbox.Inbound) int64 {
	t.Helper()
	id, err := mailbox.WriteInbound(context.Background(), db, rows...)
	if err != nil {
		t.Fatalf("mailboxtest: %v", err)
	}
	return id
}

// Bodies are rows of these bodies, received on the server's clock.
func Bodies(bodies ...string) []mailbox.Inbound {
	rows := make([]mailbox.Inbound, len(bodies))
	for i, b := range bodies {
		rows[i] = mailbox.Inbound{Body: b}
	}
	return rows
}

// ProcessedRows counts the rows of db's default mailbox table that carry
// their result.
func ProcessedRows(t testing.TB, db *sql.DB, name string) int {
	t.Helper()
	var n int
	err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&n)
	if err != nil {
		t.Fatalf("%s: count processed mailbox rows: %v", name, err)
	}
	return n
}
