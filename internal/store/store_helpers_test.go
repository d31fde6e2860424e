package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/snapshot"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

var shanghai = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

type fixture struct {
	t     *testing.T
	store *store.Store
	conn  *pgx.Conn
	epoch int64
	msgID int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := storetest.New(t, store.Options{Location: shanghai})
	return &fixture{t: t, store: db.Store, conn: db.Conn, epoch: db.Epoch}
}

// inTx runs fn in one fenced transaction and commits it unless fn fails.
func (f *fixture) inTx(fn func(tx *store.Tx) error) error {
	f.t.Helper()
	ctx := context.Background()
	tx, err := f.store.Begin(ctx, f.epoch)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

func (f *fixture) nextMeta(typ, styp string) store.Meta {
	f.msgID++
	return store.Meta{MessageID: f.msgID, Type: typ, Styp: styp}
}

// rec is a full-snapshot record of flid with FLNO and SODT on day.
var rec = storetest.Record

func (f *fixture) snapshot(day string, records ...store.SnapshotRecord) (store.SnapshotEffect, error) {
	f.t.Helper()
	return f.snapshotAs(f.nextMeta("SCHD", "RESP"), day, records...)
}

func (f *fixture) snapshotAs(meta store.Meta, day string, records ...store.SnapshotRecord) (store.SnapshotEffect, error) {
	f.t.Helper()
	var out store.SnapshotEffect
	err := f.inTx(func(tx *store.Tx) error {
		var err error
		out, err = tx.ApplySnapshot(context.Background(), meta, store.Snapshot{FullDay: true, Day: day, Records: records})
		return err
	})
	return out, err
}

func (f *fixture) mustSnapshot(day string, records ...store.SnapshotRecord) store.SnapshotEffect {
	f.t.Helper()
	out, err := f.snapshot(day, records...)
	if err != nil {
		f.t.Fatalf("snapshot of %s: %v", day, err)
	}
	return out
}

func wantRejection(t *testing.T, err error, reason string) {
	t.Helper()
	var rej *snapshot.Rejection
	if !errors.As(err, &rej) || rej.Reason != reason {
		t.Fatalf("got %v, want rejection %s", err, reason)
	}
}

func (f *fixture) flights() map[flight.FLID]flight.State {
	f.t.Helper()
	states, err := f.store.ReadFlights(context.Background(), store.Filter{})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[flight.FLID]flight.State{}
	for _, s := range states {
		out[s.FLID] = s
	}
	return out
}

func (f *fixture) roster(day string) []flight.FLID {
	f.t.Helper()
	rows, err := f.conn.Query(context.Background(), `SELECT flid FROM schd_gen_flid WHERE operation_day = $1 ORDER BY flid`, day)
	if err != nil {
		f.t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		f.t.Fatal(err)
	}
	out := []flight.FLID{}
	for _, id := range ids {
		out = append(out, flight.FLID(id))
	}
	return out
}

func (f *fixture) version(day string) int64 {
	f.t.Helper()
	var v int64
	err := f.conn.QueryRow(context.Background(), `SELECT version FROM schd_gen WHERE operation_day = $1`, day).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

type event struct {
	Kind, Event string
	FLID        int64
	Version     int64
	MessageID   int64
	Payload     string
}

// events returns the outbox rows of one message, in insertion order.
func (f *fixture) events(msgID int64) []event {
	f.t.Helper()
	rows, err := f.conn.Query(context.Background(),
		`SELECT kind, event, flid, state_version, message_id, payload FROM msg_event_record WHERE message_id = $1 ORDER BY id, kind DESC`, msgID)
	if err != nil {
		f.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (event, error) {
		var e event
		err := r.Scan(&e.Kind, &e.Event, &e.FLID, &e.Version, &e.MessageID, &e.Payload)
		return e, err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// skipWithoutLZ4 skips a test of lz4 compression on a server built
// without lz4 (the migrations keep pglz there).
func (f *fixture) skipWithoutLZ4() {
	f.t.Helper()
	if _, err := f.conn.Exec(f.t.Context(), `CREATE TEMP TABLE IF NOT EXISTS lz4_probe (b bytea COMPRESSION lz4)`); err != nil {
		f.t.Skipf("this server has no lz4: %v", err)
	}
}

func (f *fixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func flidsOf(events []event, kind, ev string) []flight.FLID {
	var out []flight.FLID
	for _, e := range events {
		if e.Kind == kind && e.Event == ev {
			out = append(out, flight.FLID(e.FLID))
		}
	}
	slices.Sort(out)
	return out
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("payload %q: %v", s, err)
	}
	return m
}
