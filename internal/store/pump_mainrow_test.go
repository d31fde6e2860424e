package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// TestMainRowUpdateNeedsTheRow: a change to a flight the working set
// believes exists is an UPDATE of its row, never an insert. When the
// database does not hold the row (a base that is not what the database
// holds), the write fails, naming what is missing, and nothing is
// created; the pump retries the batch on a fresh read.
func TestMainRowUpdateNeedsTheRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t, store.Options{})
	const ghost = flight.FLID(424242)
	base := flight.NewState(ghost)
	base.StateVersion = 1
	base.Scalars["FLNO"] = "CA1"

	tx, err := db.Store.Begin(ctx, db.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	set := engine.NewWorkingSet([]flight.FLID{ghost}, map[flight.FLID]flight.State{ghost: base}, []int64{1000}, time.Now())
	if _, err := set.Increment(store.Meta{MessageID: 1, Type: "FLOP", Styp: "UPDT"}, []flight.Commands{{FLID: ghost,
		Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261200"}}}}); err != nil {
		t.Fatal(err)
	}
	err = tx.WriteSet(ctx, set)
	if err == nil || !strings.Contains(err.Error(), "0 of 1 flights found") {
		t.Fatalf("write of a flight the database does not hold: err = %v, want the update to find 0 of 1", err)
	}
	if store.RefusesData(err) {
		t.Errorf("a stale base is not the message's fault, yet RefusesData(%v)", err)
	}
	_ = tx.Rollback(ctx)
	var n int
	if err := db.Conn.QueryRow(ctx, `SELECT count(*) FROM flight_schd WHERE flid = $1`, int64(ghost)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("flight %s was created by an update", ghost)
	}
}
