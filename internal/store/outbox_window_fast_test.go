package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// The short window read (a small window read whole, coalesced by the store)
// returns exactly what the full statement returns for the same window:
// the same records in the same order, the same coverage, payloads, parked
// flags, received times and cursor, over random outboxes (a few flights
// with states at random versions, ties included, notices alone, states
// alone, parked records above and below the cursor, received times from
// the row or its processing row) and random limits; a window of limit
// rows is left to the full statement, which then finds it full; so is one
// of as many rows as a bound below the limit, the short read's.
func TestOutboxShortWindowReadMatchesTheFullStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t, store.Options{Location: shanghai})
	// Processing rows for messages 1-3 (their received times stand in
	// for a row's missing one); messages 4 and 5 have none.
	if _, err := db.Conn.Exec(ctx, `
		INSERT INTO proc_state (message_id, status, received_at, finished_at)
		SELECT g, 'SUCCEEDED', timestamptz '2026-09-09 01:00:00+00' + g * interval '1 minute', now()
		FROM generate_series(1, 3) g`); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 300 {
		if _, err := db.Conn.Exec(ctx, `TRUNCATE msg_event, msg_event_parked`); err != nil {
			t.Fatal(err)
		}
		n := rng.IntN(12)
		var values []string
		for range n {
			notice, state, event := "NULL", "NULL", "NULL"
			switch rng.IntN(4) {
			case 0:
				notice = fmt.Sprintf("'n%d'", rng.IntN(1000))
			case 1:
				state, event = fmt.Sprintf("'s%d'", rng.IntN(1000)), []string{"'UPSERT'", "'DELETE'"}[rng.IntN(2)]
			default:
				notice = fmt.Sprintf("'n%d'", rng.IntN(1000))
				state, event = fmt.Sprintf("'s%d'", rng.IntN(1000)), []string{"'UPSERT'", "'DELETE'"}[rng.IntN(2)]
			}
			day, received := "NULL", "NULL"
			if rng.IntN(3) > 0 {
				day = fmt.Sprintf("'2026-09-%02d'", 1+rng.IntN(9))
			}
			if rng.IntN(2) == 0 {
				received = fmt.Sprintf("timestamptz '2026-09-09 02:00:00+00' + interval '%d second'", rng.IntN(100))
			}
			values = append(values, fmt.Sprintf("(%d, %d, %d, %s, %s, %s, %s, %s, %d)",
				1+rng.IntN(4), 1+rng.IntN(4), 1+rng.IntN(5), notice, event, state, day, received, rng.IntN(3)))
		}
		if n > 0 {
			if _, err := db.Conn.Exec(ctx, `
				INSERT INTO msg_event (flid, state_version, message_id, notice, event, state, operation_day, received_at, attempts)
				VALUES `+strings.Join(values, ", ")); err != nil {
				t.Fatal(err)
			}
		}
		// The cursor anywhere from below the first row to the last; a
		// third of the records parked, wherever they lie.
		if _, err := db.Conn.Exec(ctx, `
			UPDATE msg_event_cursor SET delivered_id =
				coalesce((SELECT min(id) - 1 FROM msg_event), 0) + $1`, rng.IntN(n+1)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Conn.Exec(ctx, `
			INSERT INTO msg_event_parked (event_id, kind, last_error)
			SELECT id, kind, 'refused' FROM msg_event,
				LATERAL (VALUES ('KAFKA_MSG', notice), ('KAFKA_SCHD', state)) r(kind, payload)
			WHERE payload IS NOT NULL AND (id * 7 + length(kind) + $1) % 3 = 0`, rng.IntN(3)); err != nil {
			t.Fatal(err)
		}
		limit := 1 + rng.IntN(n+2)
		full, err := db.Store.ReadWindowFull(ctx, limit, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The short read bounded by limit or below it (ReadWindow's
		// bound on the windows it reads so): whole, it is the window.
		bound := limit - rng.IntN(2)*rng.IntN(limit)
		short, whole, err := db.Store.ReadWholeWindow(ctx, bound)
		if err != nil {
			t.Fatal(err)
		}
		read, err := db.Store.ReadWindow(ctx, limit, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !sameWindow(read, full) {
			t.Fatalf("round %d, limit %d: ReadWindow\n%s\nthe full statement\n%s", round, limit, dumpWindow(read), dumpWindow(full))
		}
		if !whole {
			if bound == limit && !full.Full {
				t.Fatalf("round %d, limit %d: the short read left a window to the full statement, which is not full:\n%s",
					round, limit, dumpWindow(full))
			}
			continue
		}
		if !sameWindow(short, full) {
			t.Fatalf("round %d, limit %d, bound %d: the short read\n%s\nthe full statement\n%s", round, limit, bound, dumpWindow(short), dumpWindow(full))
		}
	}
}

func sameWindow(a, b store.Window) bool {
	if a.Cursor != b.Cursor || a.Full != b.Full || len(a.Events) != len(b.Events) {
		return false
	}
	return len(a.Events) == 0 || reflect.DeepEqual(a.Events, b.Events)
}

func dumpWindow(w store.Window) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cursor %d full %v\n", w.Cursor, w.Full)
	for _, e := range w.Events {
		fmt.Fprintf(&b, "  %d %s %s flid %d v%d day %q msg %d %q attempts %d received %s covers %v parked %v\n",
			e.ID, e.Kind, e.Event, e.FLID, e.StateVersion, e.OperationDay, e.MessageID, e.Payload, e.Attempts,
			e.ReceivedAt.UTC().Format("15:04:05"), e.Covers, e.Parked)
	}
	return b.String()
}
