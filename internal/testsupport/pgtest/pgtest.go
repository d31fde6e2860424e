// Package pgtest gives each test a fresh PostgreSQL database on the local
// server and drops it when the test ends.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/testsupport"
)

// ServerEnv names the variable holding the admin DSN of the test server.
const ServerEnv = "FLIGHTFEED_TEST_PG"

// DefaultServer is the machine's PostgreSQL (trust auth, user postgres).
const DefaultServer = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Server returns the admin DSN of the test server.
func Server() string {
	if dsn := os.Getenv(ServerEnv); dsn != "" {
		return dsn
	}
	return DefaultServer
}

// New creates an empty database and returns its DSN. The database is
// dropped (with FORCE, closing leftover connections) when t ends.
func New(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := Server()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v (is PostgreSQL running? `bash hack/services.sh` starts it)", admin, err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	name := testsupport.DatabaseName(t)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() { drop(t, admin, name) })

	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", admin, err)
	}
	u.Path = "/" + name
	return u.String()
}

func drop(t testing.TB, admin, name string) {
	// A fresh context on purpose: the test's own may already be cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Errorf("pgtest: drop %s: %v", name, err)
		return
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", pgx.Identifier{name}.Sanitize())); err != nil {
		t.Errorf("pgtest: drop %s: %v", name, err)
	}
}
