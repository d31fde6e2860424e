package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/store"
)

// A batch registers one backfill intent holding the ids of its terminal
// messages (processing rules R10.2), not one row per message; the write-back
// reads each message's result and note from its processing state, counts
// and clears messages, not rows, and a replay's own intent for a message
// still waiting is written back once.
func TestOneBackfillIntentPerBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	received := time.Date(2026, 9, 9, 2, 0, 0, 0, time.UTC)
	var archive []store.ArchivedRow
	var results []store.Result
	for id, status := range map[int64]string{11: store.StatusSucceeded, 12: store.StatusDead, 13: store.StatusSkipped, 14: store.StatusFailed} {
		archive = append(archive, store.ArchivedRow{MessageID: id, ReceivedAt: received, Size: 3, Body: []byte("<a>"), New: true})
		results = append(results, store.Result{MessageID: id, ReceivedAt: received, Type: "FLOP", Styp: "GATE", Status: status,
			Reason: "X", Note: status + " note", New: true})
	}
	if err := f.inTx(func(tx *store.Tx) error { return tx.FinishBatch(ctx, archive, nil, results) }); err != nil {
		t.Fatal(err)
	}
	if n := f.count(`SELECT count(*) FROM backfill_todo`); n != 1 {
		t.Fatalf("a batch of three terminal messages registered %d intents, want 1", n)
	}
	if n := f.count(`SELECT count(*) FROM backfill_todo WHERE message_ids @> ARRAY[11, 12, 13]::bigint[] AND cardinality(message_ids) = 3`); n != 1 {
		t.Fatal("the intent does not hold exactly the three terminal messages (FAILED is not terminal)")
	}
	type back struct {
		ID           int64
		Result, Note string
	}
	pending := func() []back {
		t.Helper()
		got, err := f.store.PendingBackfills(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []back
		for _, b := range got {
			if !b.Received.Equal(received) || b.Processed.IsZero() {
				t.Errorf("message %d: received %s, processed %s", b.MessageID, b.Received, b.Processed)
			}
			out = append(out, back{b.MessageID, b.Result, b.Note})
		}
		return out
	}
	want := []back{{11, "SUCCEEDED", "SUCCEEDED note"}, {12, "DEAD", "DEAD note"}, {13, "SKIPPED", "SKIPPED note"}}
	if diff := cmp.Diff(want, pending()); diff != "" {
		t.Fatalf("pending write-backs (-want +got):\n%s", diff)
	}
	counted := func() int64 {
		t.Helper()
		n, err := f.store.CountBackfills(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := counted(); n != 3 {
		t.Fatalf("CountBackfills = %d, want 3 messages", n)
	}

	// A replay of message 12 while its write-back waits: its own intent,
	// the message written back once, with the replay's note.
	if _, err := f.conn.Exec(ctx, `UPDATE msg_archive SET body = '<MSG/>' WHERE message_id = 12`); err != nil {
		t.Fatal(err)
	}
	req, err := f.store.RequestReplay(ctx, 12, "as-new")
	if err != nil {
		t.Fatal(err)
	}
	req.State, req.Result = store.ReplayDone, store.StatusSucceeded
	if err := f.inTx(func(tx *store.Tx) error { return tx.FinishReplay(ctx, req, "DEAD note; replayed") }); err != nil {
		t.Fatal(err)
	}
	want[1].Note = "DEAD note; replayed"
	if diff := cmp.Diff(want, pending()); diff != "" {
		t.Fatalf("pending write-backs after a replay (-want +got):\n%s", diff)
	}
	if n := counted(); n != 3 {
		t.Fatalf("CountBackfills after a replay = %d, want 3 messages", n)
	}

	// A failed write-back is noted on the intents; a partial one cuts
	// them down; the last ids delete them.
	if err := f.store.BackfillFailed(ctx, []int64{12}, errors.New("mailbox down")); err != nil {
		t.Fatal(err)
	}
	if n := f.count(`SELECT count(*) FROM backfill_todo WHERE attempts = 1 AND last_error = 'mailbox down'`); n != 2 {
		t.Fatalf("%d intents noted the failure, want both that hold message 12", n)
	}
	if err := f.store.BackfillDone(ctx, []int64{12, 13}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[:1], pending()); diff != "" {
		t.Fatalf("pending write-backs after a partial write-back (-want +got):\n%s", diff)
	}
	if n := f.count(`SELECT count(*) FROM backfill_todo`); n != 1 {
		t.Fatalf("%d intents left, want the batch's, cut down to message 11", n)
	}
	if err := f.store.BackfillDone(ctx, []int64{11}); err != nil {
		t.Fatal(err)
	}
	if n := f.count(`SELECT count(*) FROM backfill_todo`); n != 0 || counted() != 0 {
		t.Fatalf("%d intents left after every message was written back", n)
	}
}

// A reused mailbox id takes its predecessor out of the batch's intent, so
// the new message's result is never written back by the old intent; the
// other messages of that batch stay pending.
func TestReusedIDLeavesTheBatchIntent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	received := time.Date(2026, 9, 9, 2, 0, 0, 0, time.UTC)
	var archive []store.ArchivedRow
	var results []store.Result
	for _, id := range []int64{21, 22, 23} {
		archive = append(archive, store.ArchivedRow{MessageID: id, ReceivedAt: received, Size: 3, Body: []byte("<a>"), New: true})
		results = append(results, store.Result{MessageID: id, ReceivedAt: received, Status: store.StatusSucceeded, New: true})
	}
	if err := f.inTx(func(tx *store.Tx) error { return tx.FinishBatch(ctx, archive, nil, results) }); err != nil {
		t.Fatal(err)
	}
	if err := f.inTx(func(tx *store.Tx) error {
		return tx.RetireReusedIDs(ctx, []store.ReusedID{{MessageID: 22, Received: received.Add(time.Hour), Digest: []byte("new")}})
	}); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.PendingBackfills(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, b := range got {
		ids = append(ids, b.MessageID)
	}
	if diff := cmp.Diff([]int64{21, 23}, ids); diff != "" {
		t.Fatalf("pending write-backs after id 22 was reused (-want +got):\n%s", diff)
	}
	if n := f.count(`SELECT count(*) FROM backfill_todo WHERE 22 = ANY(message_ids)`); n != 0 {
		t.Fatalf("%d intents still hold the reused id", n)
	}
}

// TestBatchIntentIsNotCompressed: a backlog's batch of a thousand messages
// registers an intent of a thousand ids, an 8 kB array that lives until
// the mailbox carries the results. Since 00031 it goes out of line as it
// is: compressing it (pglz) cost the batch's backend about a millisecond,
// and the write-back as much again to read it, for space given back
// seconds later. Its ids read back whole.
func TestBatchIntentIsNotCompressed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	received := time.Date(2026, 9, 9, 2, 0, 0, 0, time.UTC)
	const messages = 1000
	archive := make([]store.ArchivedRow, 0, messages)
	results := make([]store.Result, 0, messages)
	for id := int64(1); id <= messages; id++ {
		archive = append(archive, store.ArchivedRow{MessageID: id, ReceivedAt: received, Size: 3, Body: []byte("<a>"), New: true})
		results = append(results, store.Result{MessageID: id, ReceivedAt: received, Type: "FLOP", Styp: "GATE",
			Status: store.StatusSucceeded, New: true})
	}
	if err := f.inTx(func(tx *store.Tx) error { return tx.FinishBatch(ctx, archive, nil, results) }); err != nil {
		t.Fatal(err)
	}
	if n := f.count(`SELECT count(*) FROM backfill_todo WHERE cardinality(message_ids) = $1`, messages); n != 1 {
		t.Fatalf("a batch of %d terminal messages registered %d intents of them all, want 1", messages, n)
	}
	if n := f.count(`SELECT count(*) FROM backfill_todo WHERE pg_column_compression(message_ids) IS NOT NULL`); n != 0 {
		t.Errorf("the batch's intent is stored compressed, want it out of line as it is")
	}
	if n, err := f.store.CountBackfills(ctx); err != nil || n != messages {
		t.Errorf("messages waiting for their write-back: %d (%v), want %d", n, err, messages)
	}
}
