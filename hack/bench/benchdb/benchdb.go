// Package benchdb makes and drops the benchmarks' own databases on the
// machine's PostgreSQL and MariaDB (the servers the tests use, named by
// pgtest.Server and mailboxtest.Server): a fresh feed database and a fresh
// mailbox with the AODB's tables, each under a name the caller chooses.
package benchdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// CreatePG makes an empty PostgreSQL database called name (dropping one
// left by an earlier run) and returns its URL.
func CreatePG(ctx context.Context, name string) (string, error) {
	admin := pgtest.Server()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w (bash hack/services.sh starts PostgreSQL)", admin, err)
	}
	defer func() { _ = conn.Close(ctx) }()
	id := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+id+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("drop database %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+id); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", admin, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropPG drops the PostgreSQL database called name, if any.
func DropPG(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, pgtest.Server())
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// CreateMailbox makes a MariaDB database called name (dropping one left
// by an earlier run) holding the AODB's mailbox tables and returns its DSN
// (UTC, parsed times).
func CreateMailbox(ctx context.Context, name string) (string, error) {
	cfg, err := mysql.ParseDSN(mailboxtest.Server())
	if err != nil {
		return "", fmt.Errorf("parse the mailbox server's DSN: %w", err)
	}
	if err := MailboxAdmin(ctx, "DROP DATABASE IF EXISTS `"+name+"`", "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		return "", fmt.Errorf("create database %s: %w (bash hack/services.sh starts MariaDB)", name, err)
	}
	cfg.DBName, cfg.ParseTime, cfg.Loc = name, true, time.UTC
	dsn := cfg.FormatDSN()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return "", fmt.Errorf("open mailbox %s: %w", name, err)
	}
	defer func() { _ = db.Close() }()
	if err := mailbox.CreateTables(ctx, db); err != nil {
		return "", fmt.Errorf("create the mailbox tables in %s: %w", name, err)
	}
	return dsn, nil
}

// DropMailbox drops the MariaDB database called name, if any.
func DropMailbox(ctx context.Context, name string) error {
	return MailboxAdmin(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
}

// MailboxAdmin runs statements in order as the mailbox server's
// administrator, stopping at the first that fails.
func MailboxAdmin(ctx context.Context, statements ...string) error {
	cfg, err := mysql.ParseDSN(mailboxtest.Server())
	if err != nil {
		return fmt.Errorf("parse the mailbox server's DSN: %w", err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return fmt.Errorf("open the mailbox server: %w", err)
	}
	defer func() { _ = admin.Close() }()
	for _, s := range statements {
		if _, err := admin.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}
