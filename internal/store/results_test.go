package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/store"
)

// A batch writes the archive row, processing state and backfill intent of
// a message it knows is new with plain INSERTs, and upserts those of a
// message seen before (a FAILED one retried). A message wrongly said to be
// new fails the batch loudly (a unique violation) and changes nothing.
func TestResultsOfNewMessagesAreInsertedAndRetriesUpserted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	received := time.Date(2026, 9, 9, 2, 0, 0, 0, time.UTC)
	finish := func(isNew bool, status string) error {
		arch := []store.ArchivedRow{{MessageID: 7, ReceivedAt: received, Size: 3, Body: []byte("<a>"), New: isNew}}
		res := []store.Result{{MessageID: 7, ReceivedAt: received, Type: "FLOP", Styp: "GATE", Status: status, Reason: "X", Note: status, New: isNew}}
		return f.inTx(func(tx *store.Tx) error { return tx.FinishBatch(ctx, arch, nil, res) })
	}
	state := func() (status string, attempts, archived, intents int) {
		t.Helper()
		if err := f.conn.QueryRow(ctx, `SELECT status, attempts FROM proc_state WHERE message_id = 7`).Scan(&status, &attempts); err != nil {
			t.Fatal(err)
		}
		return status, attempts, f.count(`SELECT count(*) FROM msg_archive WHERE message_id = 7`),
			f.count(`SELECT count(*) FROM backfill_todo WHERE 7 = ANY(message_ids)`)
	}

	if err := finish(true, store.StatusFailed); err != nil {
		t.Fatalf("first attempt of a new message: %v", err)
	}
	if s, a, arch, in := state(); s != store.StatusFailed || a != 1 || arch != 1 || in != 0 {
		t.Fatalf("after the first attempt: %s, attempts %d, %d archived, %d intents", s, a, arch, in)
	}
	if err := finish(false, store.StatusSucceeded); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if s, a, arch, in := state(); s != store.StatusSucceeded || a != 2 || arch != 1 || in != 1 {
		t.Fatalf("after the retry: %s, attempts %d, %d archived, %d intents; want SUCCEEDED, 2, 1, 1", s, a, arch, in)
	}
	err := finish(true, store.StatusDead)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("a message said to be new but known: %v, want a unique violation", err)
	}
	if s, a, arch, in := state(); s != store.StatusSucceeded || a != 2 || arch != 1 || in != 1 {
		t.Fatalf("the refused batch changed something: %s, attempts %d, %d archived, %d intents", s, a, arch, in)
	}
}
