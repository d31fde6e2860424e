// Package storetest gives a test a fresh, migrated state database: the
// store holding the current fencing epoch, and a plain connection for
// assertions. Everything is closed and dropped when the test ends.
// ApplyIncrement and DeleteFlights change flights in a transaction the
// way the pump does, for tests and benchmarks that run without one;
// Record and FullRecord build the snapshot records they apply.
package storetest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// DB is one test's state database.
type DB struct {
	DSN   string
	Store *store.Store
	// Conn is a separate connection for reading what the store wrote.
	Conn *pgx.Conn
	// Epoch is the fencing epoch the test writes with.
	Epoch int64
}

// New creates, migrates and opens a database, and takes an epoch.
func New(t testing.TB, opts store.Options) *DB {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.New(t)
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatalf("storetest: migrate: %v", err)
	}
	s, err := store.Open(ctx, dsn, opts)
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(s.Close)
	epoch, err := s.TakeEpoch(ctx, "test")
	if err != nil {
		t.Fatalf("storetest: epoch: %v", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("storetest: connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return &DB{DSN: dsn, Store: s, Conn: conn, Epoch: epoch}
}
