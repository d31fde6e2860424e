package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
)

// A reference-data request (RQRD) is a req_track row of kind RQRD:<TYPE>
// without a day: it takes its SEQN from the one sequence (LastSeqn reads
// it), has one live request per list, and counts as asked for when sent or
// answered; a list replaced whole by any message counts too, an upsert
// does not.
func TestReferenceRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	var glst, airl, again *store.Request
	if err := f.inTx(func(tx *store.Tx) error {
		var err error
		if glst, err = tx.OpenReferenceRequest(ctx, "GLST", "AODB", "REFDATA", 41); err != nil {
			return err
		}
		airl, err = tx.OpenReferenceRequest(ctx, "AIRL", "AODB", "REFDATA", 42)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if glst.Kind != "RQRD:GLST" || glst.Day != "" || glst.Status != store.RequestPending || glst.Receiver != "AODB" || glst.Seqn != 41 {
		t.Fatalf("opened %+v", glst)
	}
	if n, err := f.store.LastSeqn(ctx); err != nil || n != 42 {
		t.Fatalf("LastSeqn = %d, %v; want the newest RQRD's 42", n, err)
	}
	if cur, err := f.store.CurrentRequest(ctx, pumpdata.ReferenceRequestKind("GLST")); err != nil || cur == nil || cur.ID != glst.ID {
		t.Fatalf("live GLST request %+v, %v; want %d", cur, err, glst.ID)
	}

	sent := time.Now()
	if err := f.store.RequestSent(ctx, glst.ID, 7, sent); err != nil {
		t.Fatal(err)
	}
	types := []string{"AIRL", "CITY", "GLST", "TLST"}
	asked := func(since time.Time, want ...string) {
		t.Helper()
		got, err := f.store.ReferenceAskedSince(ctx, types, since)
		if err != nil {
			t.Fatal(err)
		}
		wantSet := map[string]bool{}
		for _, typ := range want {
			wantSet[typ] = true
		}
		if diff := cmp.Diff(wantSet, got); diff != "" {
			t.Fatalf("asked since %s (-want +got):\n%s", since.Format(time.RFC3339Nano), diff)
		}
	}
	asked(sent.Add(-time.Minute), "GLST") // AIRL is opened, not sent
	asked(sent.Add(time.Minute))

	if err := f.inTx(func(tx *store.Tx) error {
		return tx.ApplyReference(ctx, []store.ReferenceChange{
			{MessageID: 9, Type: "TLST", Op: pumpdata.RefReplace, Keys: []string{"T1"}, Docs: [][]byte{[]byte(`{"TCOD":"T1"}`)}},
			{MessageID: 10, Type: "CITY", Op: pumpdata.RefUpsert, Keys: []string{"PEK"}, Docs: [][]byte{[]byte(`{"ITCD":"PEK"}`)}},
		})
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.inTx(func(tx *store.Tx) error { return tx.CompleteRequest(ctx, airl.ID, 11) }); err != nil {
		t.Fatal(err)
	}
	asked(sent.Add(-time.Minute), "AIRL", "GLST", "TLST")
	asked(time.Now().Add(time.Minute))

	// A new request for the gates expires the live one.
	if err := f.inTx(func(tx *store.Tx) error {
		var err error
		again, err = tx.OpenReferenceRequest(ctx, "GLST", "AODB", "REFDATA", 43)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var status string
	if err := f.conn.QueryRow(ctx, `SELECT status FROM req_track WHERE id = $1`, glst.ID).Scan(&status); err != nil || status != store.RequestExpired {
		t.Fatalf("the first GLST request is %s (%v), want EXPIRED", status, err)
	}
	if cur, err := f.store.CurrentRequest(ctx, pumpdata.ReferenceRequestKind("GLST")); err != nil || cur == nil || cur.ID != again.ID {
		t.Fatalf("live GLST request %+v, %v; want %d", cur, err, again.ID)
	}
}

// Migration 23: only an RQRD row has no day; a Down dates the RQRD rows
// (kept, their SEQN taken) and the next Up clears the date again.
func TestReferenceRequestsHaveNoDay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, dsn := migratedAt(t)
	const ins = `INSERT INTO req_track (kind, operation_day, range_start, range_end, routing_id, seqn, status)
		VALUES ($1, $2::date, '', '', 'AODB', $3, 'EXPIRED')`
	exec(t, conn, ins, "RQRD:GLST", nil, 1)
	exec(t, conn, ins, "RQFD", "2026-09-09", 2)
	_ = execFails(t, conn, "23514", ins, "RQFD", nil, 3)
	_ = execFails(t, conn, "23514", ins, "RQRD:AIRL", "2026-09-09", 4)

	if _, err := store.MigrateDownTo(ctx, dsn, 22); err != nil {
		t.Fatalf("down to 22: %v", err)
	}
	var dated int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM req_track WHERE operation_day IS NOT NULL`).Scan(&dated); err != nil || dated != 2 {
		t.Fatalf("after down: %d rows dated (%v), want both", dated, err)
	}
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatalf("up again: %v", err)
	}
	var kinds []string
	rows, err := conn.Query(ctx, `SELECT kind FROM req_track WHERE operation_day IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	if kinds, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(kinds) != 1 || kinds[0] != "RQRD:GLST" {
		t.Fatalf("rows without a day after up: %v (%v), want the RQRD one", kinds, err)
	}
}
