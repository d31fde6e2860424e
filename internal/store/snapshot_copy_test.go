package store_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// A snapshot's chunks write the same rows, column for column, whether
// they send their new main rows, child rows and events by COPY (the
// pump's own binary encoding) or as arrays: every column of flight_schd
// (typed times, jsonb attributes, NULLs, a NULL operation day), of every
// child table (NULL sequence and item columns, jsonb attrs, route kinds),
// msg_event and flight_change — for a first full day, a second that
// changes some flights (main rows updated, child rows replaced beside new
// flights copied) and diff-deletes one, and a window of new flights
// without a day. Not parallel: it moves the package's threshold and chunk
// size.
func TestSnapshotByCopyWritesWhatArraysWrite(t *testing.T) {
	at := time.Date(2026, 9, 9, 6, 0, 0, 123456000, time.UTC)
	// A record with an anomaly key that has no column (its jsonb rest), a
	// collection item without its sequence or any item column, and a
	// record without SODT (no typed time).
	odd := func(flid flight.FLID, day string) store.SnapshotRecord {
		return store.SnapshotRecord{Day: day, Cmds: flight.Commands{FLID: flid, Full: true, Cmds: []flight.Command{
			{Tag: "FLNO", Op: flight.OpSet, Value: "CA9"},
			{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"ZZZ": "only\"unmapped"}, {"GTNO": "2", "GATE": ""}}},
			{Tag: "ROUT", Op: flight.OpReplace, Items: []flight.Item{{"APCD": "PEK"}}},
			{Tag: "FDIV", Op: flight.OpSet, Anomaly: flight.Item{"DDES": "HKG", "ZZZ": "rest"}},
		}}}
	}
	full := func(lo, hi, variant int, day string) []store.SnapshotRecord {
		var out []store.SnapshotRecord
		for i := lo; i < hi; i++ {
			gate := "A1"
			if variant > 0 && i%3 == 0 {
				gate = fmt.Sprintf("B%d", variant)
			}
			out = append(out, storetest.FullRecord(flight.FLID(500+i), day, i, gate, i%2 == 0))
		}
		return out
	}
	steps := []store.Snapshot{
		{FullDay: true, Day: day9, Records: append(full(0, 11, 0, day9), odd(600, day9))},
		{FullDay: true, Day: day9, Records: append(full(1, 14, 1, day9), odd(600, day9))},
		{Records: append(full(20, 27, 0, ""), odd(601, ""))},
	}
	dump := func(copyMin int) map[string]string {
		t.Helper()
		restore := store.SetSnapshotCopyMin(copyMin)
		defer restore()
		restoreChunk := store.SetSnapshotChunk(5)
		defer restoreChunk()
		db := storetest.New(t, store.Options{Location: shanghai, Clock: clocktesting.NewFakePassiveClock(at)})
		f := &fixture{t: t, store: db.Store, conn: db.Conn, epoch: db.Epoch}
		for i, snap := range steps {
			meta := f.nextMeta("SCHD", "RESP")
			meta.ReceivedAt = at.Add(-time.Duration(i) * time.Minute)
			if err := f.inTx(func(tx *store.Tx) error {
				_, err := tx.ApplySnapshot(t.Context(), meta, snap)
				return err
			}); err != nil {
				t.Fatalf("snapshotCopyMin %d, step %d: %v", copyMin, i+1, err)
			}
		}
		out := map[string]string{}
		tables := []string{"flight_gate", "flight_checkin", "flight_belt", "flight_stand_plan", "flight_chute",
			"flight_delay", "flight_bridge_op", "flight_chock_op", "flight_route_point"}
		queries := map[string]string{
			"flight_schd":   `SELECT to_jsonb(x) - 'created_at' FROM flight_schd x`,
			"msg_event":     `SELECT to_jsonb(x) - 'created_at' - 'id' FROM msg_event x`,
			"flight_change": `SELECT flid, state_version, message_id, received_at, operation_day, kind, changes::text, committed_at FROM flight_change`,
		}
		for _, table := range tables {
			queries[table] = `SELECT to_jsonb(x) - 'created_at' FROM ` + table + ` x`
		}
		for table, query := range queries {
			var rows json.RawMessage
			if err := f.conn.QueryRow(t.Context(), `SELECT coalesce(json_agg(r ORDER BY r::text), '[]') FROM (`+query+`) r`).Scan(&rows); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
			if string(rows) == "[]" {
				t.Fatalf("snapshotCopyMin %d: no rows in %s", copyMin, table)
			}
			out[table] = string(rows)
		}
		return out
	}
	arrays, copied := dump(1<<20), dump(1)
	if diff := cmp.Diff(arrays, copied); diff != "" {
		t.Fatalf("by COPY (-arrays +copy):\n%s", diff)
	}
}
