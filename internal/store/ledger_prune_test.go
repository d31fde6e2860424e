package store_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// TestPruneLedgerHoldsOnlyTheDaysConcerned: ledger retention's
// preconditions are per day (processing rules R8.3). A flight still current, an
// unfinished snapshot message and a snapshot message not yet written back
// each keep the day their trace rows name, and only that day; an
// unfinished FLOP keeps none (a FLOP never writes a ledger); an unfinished
// snapshot of unknown day keeps every day. Ledger names why each day is
// kept, and the first precondition wins.
func TestPruneLedgerHoldsOnlyTheDaysConcerned(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	recv := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := f.conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	days := []string{"2026-09-01", "2026-09-02", "2026-09-03", "2026-09-04", "2026-09-05", "2026-09-06"}
	for i, d := range days {
		exec(`INSERT INTO schd_gen (operation_day, version, last_message_id, last_recv_at) VALUES ($1, 1, $2, $3)`, d, 100+i, recv)
	}
	// 09-02: a flight of the day is current.
	f.mustSnapshot("2026-09-02", storetest.FullRecord(7, "2026-09-02", 0, "A1", false))
	state := func(id int64, typ, status, reason string) {
		t.Helper()
		finished := any(nil)
		if status != "PENDING" && status != store.StatusFailed {
			finished = recv
		}
		exec(`INSERT INTO proc_state (message_id, msg_type, msg_styp, status, reason, received_at, finished_at)
			VALUES ($1, $2, 'X', $3, NULLIF($4, ''), $5, $6)`, id, typ, status, reason, recv, finished)
	}
	trace := func(id int64, day string) {
		t.Helper()
		if err := f.store.AppendTraceLog(ctx, store.TraceEntry{Day: day, MessageID: id, ReceivedAt: recv, Result: store.TraceRolledBack}); err != nil {
			t.Fatal(err)
		}
	}
	// 09-03: a snapshot FAILED (INFRA), its trace row names the day.
	state(201, "SCHD", store.StatusFailed, "INFRA")
	trace(201, "2026-09-03")
	// 09-04: a snapshot committed, waiting for its write-back.
	state(202, "SCHD", store.StatusSucceeded, "")
	trace(202, "2026-09-04")
	exec(`INSERT INTO backfill_todo (message_ids, processed_at) VALUES ('{202}', $1)`, recv)
	// A FLOP retried and a FLOP waiting for its write-back hold nothing.
	state(203, "FLOP", store.StatusFailed, "INFRA")
	state(204, "FLOP", store.StatusSucceeded, "")
	exec(`INSERT INTO backfill_todo (message_ids, processed_at) VALUES ('{204}', $1)`, recv)

	held := func() map[string]string {
		t.Helper()
		ledger, err := f.store.Ledger(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, d := range ledger {
			out[d.Day] = d.Held
		}
		return out
	}
	want := map[string]string{
		"2026-09-01": "",
		"2026-09-02": "FLIGHTS_CURRENT: flights of the day are still in current state (not yet moved to history)",
		"2026-09-03": "MESSAGE_UNFINISHED: message 201 is FAILED (INFRA)",
		"2026-09-04": "BACKFILL_PENDING: message 202 (SUCCEEDED) is not yet written back to the mailbox",
		"2026-09-05": "",
		"2026-09-06": "",
	}
	if got := held(); !maps.Equal(got, want) {
		t.Fatalf("held days:\n got %v\nwant %v", got, want)
	}
	prune := func(cutoff string) []string {
		t.Helper()
		var pruned []string
		if err := f.inTx(func(tx *store.Tx) error {
			var err error
			pruned, err = tx.PruneLedger(ctx, cutoff)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(pruned)
		return pruned
	}
	// 09-06 is not before the cutoff; 09-02, 09-03 and 09-04 are held.
	if got := prune("2026-09-06"); !slices.Equal(got, []string{"2026-09-01", "2026-09-05"}) {
		t.Fatalf("pruned %v, want 2026-09-01 and 2026-09-05", got)
	}

	// A snapshot FAILED before any trace row names its day holds every day.
	state(205, "SCHD", "PENDING", "")
	for _, d := range []string{"2026-09-03", "2026-09-04", "2026-09-06"} {
		if got := held()[d]; d != "2026-09-03" && got != "MESSAGE_UNFINISHED: message 205 is PENDING" {
			t.Errorf("day %s held %q, want by message 205", d, got)
		}
	}
	exec(`UPDATE proc_state SET status = 'DEAD', finished_at = $1 WHERE message_id IN (201, 205)`, recv)
	exec(`DELETE FROM backfill_todo`)
	if got := prune("2026-09-07"); !slices.Equal(got, []string{"2026-09-03", "2026-09-04", "2026-09-06"}) {
		t.Fatalf("once the messages finished: pruned %v, want 09-03, 09-04, 09-06 (09-02 keeps its flight)", got)
	}
}
