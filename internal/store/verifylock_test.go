package store_test

import (
	"testing"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// TestVerificationLockIsFreeWhenUnlockReturns: once unlock returns, the
// next verification gets the lock at once — a script's second `verify`
// right after its first was refused ("another verification of this feed
// is running") while the server's backend of the first had not yet seen
// its connection close. The lock is looked at from another session right
// after each unlock, many times, since the window was a moment wide.
func TestVerificationLockIsFreeWhenUnlockReturns(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.Options{Location: shanghai})
	ctx := t.Context()
	for i := range 200 {
		unlock, err := store.LockVerification(ctx, db.DSN)
		if err != nil {
			t.Fatalf("round %d: lock: %v", i, err)
		}
		unlock()
		var held int
		if err := db.Conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&held); err != nil {
			t.Fatal(err)
		}
		if held != 0 {
			t.Fatalf("round %d: the verification lock is still held after unlock returned", i)
		}
	}
}
