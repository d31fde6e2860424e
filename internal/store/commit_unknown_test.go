package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/store"
)

// A trace row of an attempt whose COMMIT failed without an answer
// (COMMIT_UNKNOWN) is resolved from what committed: the result it kept for
// that case when its message is SUCCEEDED for the same receipt and no later
// attempt of it was traced, ROLLED_BACK otherwise (processing rules R5.6: one row
// per attempt, saying what became of it).
func TestResolveCommitUnknownFollowsWhatCommitted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	recv := time.Date(2026, 9, 9, 1, 0, 0, 0, time.UTC)
	state := func(id int64, received time.Time, status string) {
		t.Helper()
		if err := f.inTx(func(tx *store.Tx) error {
			return tx.RecordResult(ctx, store.Result{MessageID: id, ReceivedAt: received, Status: status, Reason: "X", PayloadDigest: []byte{1}})
		}); err != nil {
			t.Fatal(err)
		}
	}
	trace := func(id int64, received time.Time, result, ifCommitted string) {
		t.Helper()
		if err := f.store.AppendTraceLog(ctx, store.TraceEntry{MessageID: id, ReceivedAt: received, Result: result, IfCommitted: ifCommitted,
			Detail: "commit: connection reset"}); err != nil {
			t.Fatal(err)
		}
	}
	// 1: committed (SUCCEEDED, no later attempt).
	state(1, recv, store.StatusSucceeded)
	trace(1, recv, store.TraceCommitUnknown, store.TraceCommitted)
	// 2: committed as a replay of the day's last snapshot.
	state(2, recv, store.StatusSucceeded)
	trace(2, recv, store.TraceCommitUnknown, store.TraceReplaySkipped)
	// 3: did not commit; its retry did (a later row).
	state(3, recv, store.StatusSucceeded)
	trace(3, recv, store.TraceCommitUnknown, store.TraceCommitted)
	trace(3, recv, store.TraceCommitted, "")
	// 4: did not commit; the message was given up later (DEAD, INFRA).
	state(4, recv, store.StatusDead)
	trace(4, recv, store.TraceCommitUnknown, store.TraceCommitted)
	// 5: no processing state at all.
	trace(5, recv, store.TraceCommitUnknown, store.TraceCommitted)
	// 6: the id's processing state is another message's (another receipt).
	state(6, recv.Add(time.Hour), store.StatusSucceeded)
	trace(6, recv, store.TraceCommitUnknown, store.TraceCommitted)
	// 7: committed, then the mailbox id was reused: its record moved to
	// msg_id_reuse.
	state(7, recv, store.StatusSucceeded)
	trace(7, recv, store.TraceCommitUnknown, store.TraceCommitted)
	if err := f.inTx(func(tx *store.Tx) error {
		return tx.RetireReusedIDs(ctx, []store.ReusedID{{MessageID: 7, Received: recv.Add(time.Hour), Digest: []byte{2}}})
	}); err != nil {
		t.Fatal(err)
	}

	n, err := f.store.ResolveCommitUnknown(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Errorf("resolved %d rows, want 7", n)
	}
	rows, err := f.conn.Query(ctx, `SELECT msg_id, result, coalesce(result_if_committed, '-'), detail FROM schd_snap_log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id int64
		var result, ifCommitted, detail string
		if err := rows.Scan(&id, &result, &ifCommitted, &detail); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s %s | %s", id, result, ifCommitted, detail))
	}
	rows.Close()
	found := func(what string) string {
		return "commit: connection reset; its commit failed without an answer; a later start found it " + what
	}
	want := []string{
		"1 COMMITTED - | " + found("committed"),
		"2 REPLAY_SKIPPED - | " + found("committed"),
		"3 ROLLED_BACK - | " + found("not committed"),
		"3 COMMITTED - | commit: connection reset",
		"4 ROLLED_BACK - | " + found("not committed"),
		"5 ROLLED_BACK - | " + found("not committed"),
		"6 ROLLED_BACK - | " + found("not committed"),
		"7 COMMITTED - | " + found("committed"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("trace rows (-want +got):\n%s", diff)
	}
	// Resolved rows are never touched again.
	if n, err := f.store.ResolveCommitUnknown(ctx); err != nil || n != 0 {
		t.Fatalf("second resolution: %d rows, %v", n, err)
	}
}

// A FAILED result (a retry to come, recorded after a rollback) never
// replaces a terminal state nor another message's state of the same id:
// a committed result is never downgraded. Attempts add up.
func TestFailedNeverReplacesATerminalState(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	recv := time.Date(2026, 9, 9, 1, 0, 0, 0, time.UTC)
	write := func(id int64, received time.Time, status string, attempts int) {
		t.Helper()
		if err := f.inTx(func(tx *store.Tx) error {
			return tx.RecordResult(ctx, store.Result{MessageID: id, ReceivedAt: received, Status: status, Reason: "R" + status,
				PayloadDigest: []byte{1}, Attempts: attempts})
		}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(id int64) string {
		t.Helper()
		var status, reason string
		var attempts int
		if err := f.conn.QueryRow(ctx, `SELECT status, reason, attempts FROM proc_state WHERE message_id = $1`, id).
			Scan(&status, &reason, &attempts); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s %s %d", status, reason, attempts)
	}
	write(1, recv, store.StatusSucceeded, 0)
	write(1, recv, store.StatusFailed, 1)
	write(2, recv, store.StatusDead, 0)
	write(2, recv, store.StatusFailed, 1)
	write(3, recv, store.StatusFailed, 3) // three attempts, two of them not recorded before
	write(3, recv, store.StatusFailed, 1)
	write(4, recv, store.StatusFailed, 1)
	write(4, recv.Add(time.Hour), store.StatusFailed, 1) // another message with the id
	write(5, recv, store.StatusFailed, 2)
	write(5, recv, store.StatusSucceeded, 1)
	got := []string{read(1), read(2), read(3), read(4), read(5)}
	want := []string{"SUCCEEDED RSUCCEEDED 1", "DEAD RDEAD 1", "FAILED RFAILED 4", "FAILED RFAILED 1", "SUCCEEDED RSUCCEEDED 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("processing states (-want +got):\n%s", diff)
	}
}
