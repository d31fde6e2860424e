package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// Unanswered names the call that waits and since when, while it waits, and
// nothing once it returned: here a Begin waiting for the pipeline lock that
// another session holds (the pump's view of a database that does not
// answer).
func TestUnansweredNamesTheCallThatWaits(t *testing.T) {
	db := storetest.New(t, store.Options{})
	ctx := t.Context()
	if since, what := db.Store.Unanswered(); !since.IsZero() {
		t.Fatalf("idle store: %s in progress since %s", what, since)
	}
	holder, err := db.Conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT 1 FROM pipeline_lock WHERE name = $1 FOR UPDATE`, store.LockName); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	done := make(chan error, 1)
	go func() {
		tx, err := db.Store.Begin(ctx, db.Epoch)
		if err == nil {
			err = tx.Rollback(context.WithoutCancel(ctx))
		}
		done <- err
	}()
	await.Eventually(t, "the waiting Begin to show", 10*time.Second, func() (bool, string) {
		since, what := db.Store.Unanswered()
		return !since.IsZero() && strings.HasPrefix(what, "SELECT epoch"), what
	})
	since, _ := db.Store.Unanswered()
	if since.Before(before.Add(-time.Second)) || since.After(time.Now()) {
		t.Errorf("in progress since %s, the call began after %s", since, before)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if since, what := db.Store.Unanswered(); !since.IsZero() {
		t.Errorf("after the call returned: %s in progress since %s", what, since)
	}
}

// The store's sessions run without JIT compilation, whatever the server's
// default (the DSN policy allows no jit key, so nothing turns it back on).
func TestSessionsRunWithoutJIT(t *testing.T) {
	db := storetest.New(t, store.Options{})
	if v, err := db.Store.Setting(t.Context(), "jit"); err != nil || v != "off" {
		t.Fatalf("jit = %q (%v), want off", v, err)
	}
}
