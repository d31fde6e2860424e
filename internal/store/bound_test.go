package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/fakepg"
	"github.com/flightfeed/flightfeed/internal/testsupport/heapwatch"
)

// A server at the database's address that answers the startup with one
// message claiming 900 MB fails the connection at its header, with an
// error naming the database and the limit, and the process allocates
// nothing for it: pgx alone would reserve the 900 MB before reading them.
// The pool (Open) and the one-off connection of the schema commands
// (Migrate) are both bounded.
func TestHugeMessageFailsTheDatabaseConnectionInBoundedMemory(t *testing.T) {
	const claimed = 900_000_000
	srv := fakepg.Start(t, claimed)
	dsn := "postgres://postgres@" + srv.Addr() + "/ff?sslmode=prefer&connect_timeout=5"
	for _, c := range []struct {
		name    string
		connect func(context.Context) error
		limit   int64
	}{
		{"Open, default bound", func(ctx context.Context) error {
			s, err := store.Open(ctx, dsn, store.Options{})
			if err == nil {
				s.Close()
			}
			return err
		}, store.MessageBound(0)},
		{"Open, the feed's 100 MiB messages", func(ctx context.Context) error {
			s, err := store.Open(ctx, dsn, store.Options{MaxMessageBytes: 100 << 20})
			if err == nil {
				s.Close()
			}
			return err
		}, 101 << 20},
		{"Migrate", func(ctx context.Context) error {
			_, err := store.Migrate(ctx, dsn)
			return err
		}, store.MessageBound(0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			before := srv.Sent()
			var err error
			peak, total := heapwatch.Run(func() { err = c.connect(ctx) })
			t.Logf("server claimed %d MB, sent %.1f MiB; heap peak grew %.1f MiB, %.1f MiB allocated in all",
				claimed/1_000_000, float64(srv.Sent()-before)/(1<<20), float64(peak)/(1<<20), float64(total)/(1<<20))
			var bound *store.MessageBoundError
			if !errors.As(err, &bound) || bound.Limit != c.limit || bound.Size != claimed {
				t.Fatalf("got %v, want a *store.MessageBoundError of %d bytes over %d", err, claimed, c.limit)
			}
			if want := "database: server sent a message (type 'R') of 900000000 bytes, more than the limit"; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			if peak > 16<<20 {
				t.Errorf("heap peak grew %d MiB, want under 16 MiB", peak>>20)
			}
		})
	}
}
