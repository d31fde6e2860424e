package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// A batch's archive rows, results, events and history rows read back the
// same whether FinishBatch sends them as arrays (a small batch) or by COPY
// (copyRowsMin rows or more): every column the pump writes, NULLs, a NULL
// mailbox body, flags, notes with a NUL and invalid UTF-8, terminal and
// FAILED results, an upsert beside the new rows, and the one backfill
// intent. A message said to be new but recorded already still fails the
// batch with ErrNotNew on the COPY path. Not parallel: it moves the
// package's threshold.
func TestFinishBatchByCopyWritesWhatArraysWrite(t *testing.T) {
	received := time.Date(2026, 9, 9, 2, 3, 4, 567891000, time.UTC)
	archive := []store.ArchivedRow{
		{MessageID: 1, ReceivedAt: received, Size: 3, Body: []byte("<a>"), New: true},
		{MessageID: 2, ReceivedAt: received.Add(time.Second), Size: 0, Body: nil, New: true},
		{MessageID: 3, ReceivedAt: received, Size: 9, Body: []byte("x\x00\xffyz"), Truncated: true, Digest: []byte("given"), New: true},
		{MessageID: 4, ReceivedAt: received, Size: 3, Body: []byte("<b>"), New: false},
	}
	results := []store.Result{
		{MessageID: 1, ReceivedAt: received, IdentityKey: "AODB|FLOP|ESTT|1", PayloadDigest: []byte{1, 2}, ContentDigest: []byte{3},
			Type: "FLOP", Styp: "ESTT", Status: store.StatusSucceeded, Flags: []string{"a", `b"c\`}, New: true},
		{MessageID: 2, ReceivedAt: received.Add(time.Second), Status: store.StatusDead, Reason: "MALFORMED",
			Note: "bad\x00 \xfe text", Attempts: 3, New: true},
		{MessageID: 3, ReceivedAt: received, Type: "FL\xffOP", Status: store.StatusFailed, Reason: "INFRA", New: true},
		{MessageID: 4, ReceivedAt: received, Type: "FLOP", Styp: "GTDT", Status: store.StatusSkipped, Note: "re-sent", New: false},
	}
	estt := func(hour int) []flight.Commands {
		out := make([]flight.Commands, 5)
		for i := range out {
			out[i] = flight.Commands{FLID: flight.FLID(100 + i), Cmds: []flight.Command{
				{Tag: "ESTT", Op: flight.OpSet, Value: fmt.Sprintf("09SEP26%02d%02d", hour, i)}}}
		}
		return out
	}
	records := estt(12)
	write := func(copyMin int) map[string]string {
		t.Helper()
		restore := store.SetCopyRowsMin(copyMin)
		defer restore()
		f := newFixture(t)
		f.msgID = 10 // the flights' first versions are not the batch's
		ctx := t.Context()
		// Four flights with a day, one without: its events' days are NULL.
		f.mustSnapshot(day9, rec(100, "CA1", day9), rec(101, "CA2", day9), rec(102, "CA3", day9), rec(103, "CA4", day9))
		if _, err := f.increment("ESTT", estt(10)[4]); err != nil {
			t.Fatal(err)
		}
		meta := store.Meta{MessageID: 1, Type: "FLOP", Styp: "ESTT", ReceivedAt: received}
		if err := f.inTx(func(tx *store.Tx) error {
			set, err := tx.LoadSet(ctx, flids(records), len(records), nil)
			if err != nil {
				return err
			}
			if _, err := set.Increment(meta, records); err != nil {
				return err
			}
			return tx.FinishBatch(ctx, archive, set, results)
		}); err != nil {
			t.Fatalf("copyRowsMin %d: %v", copyMin, err)
		}
		dump := map[string]string{}
		for table, query := range map[string]string{
			"msg_archive": `SELECT message_id, received_at, byte_size, truncated, digest, body FROM msg_archive`,
			"proc_state": `SELECT message_id, identity_key, payload_digest, content_digest, msg_type, msg_styp, status, reason, note,
				flags, attempts, received_at, finished_at IS NOT NULL AS finished FROM proc_state`,
			// The states differ in UPDATED_AT alone: each run's transaction time.
			"msg_event": `SELECT event, flid, state_version, operation_day, message_id, attempts, received_at,
				regexp_replace(state, '"UPDATED_AT":"[^"]*"', '') AS state, notice FROM msg_event WHERE message_id = 1`,
			"flight_change": `SELECT flid, state_version, message_id, received_at, operation_day, kind, changes::text FROM flight_change WHERE message_id = 1`,
			"backfill_todo": `SELECT message_ids FROM backfill_todo`,
		} {
			var rows json.RawMessage
			if err := f.conn.QueryRow(ctx, `SELECT coalesce(json_agg(r ORDER BY r::text), '[]') FROM (`+query+`) r`).Scan(&rows); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
			dump[table] = string(rows)
		}
		if copyMin == 1 {
			// A message said to be new whose result is recorded already.
			again := []store.Result{{MessageID: 1, ReceivedAt: received, Status: store.StatusSucceeded, New: true}}
			err := f.inTx(func(tx *store.Tx) error { return tx.FinishBatch(ctx, nil, nil, again) })
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "23505" || !errors.Is(err, store.ErrNotNew) {
				t.Fatalf("by COPY, a result said to be new but recorded: %v, want a unique violation (ErrNotNew)", err)
			}
		}
		return dump
	}
	arrays, copied := write(1000), write(1)
	if diff := cmp.Diff(arrays, copied); diff != "" {
		t.Fatalf("by COPY (-arrays +copy):\n%s", diff)
	}
	for table, rows := range arrays {
		if rows == "[]" {
			t.Fatalf("%s: no rows written", table)
		}
	}
}
