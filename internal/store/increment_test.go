package store_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

func (f *fixture) increment(styp string, records ...flight.Commands) (engine.IncrementEffect, error) {
	f.t.Helper()
	var out engine.IncrementEffect
	err := f.inTx(func(tx *store.Tx) error {
		var err error
		out, err = storetest.ApplyIncrement(context.Background(), tx, f.nextMeta("FLOP", styp), records)
		return err
	})
	return out, err
}

func (f *fixture) fdel(flids ...flight.FLID) (engine.DeleteEffect, error) {
	f.t.Helper()
	var out engine.DeleteEffect
	err := f.inTx(func(tx *store.Tx) error {
		var err error
		out, err = storetest.DeleteFlights(context.Background(), tx, f.nextMeta("FLOP", "FDEL"), flids)
		return err
	})
	return out, err
}

type gateRow struct {
	Ordinal   int32
	SourceSeq string
	Gate      string
	Gtyp      string
	Version   int64
}

// processing rules R6.1 as rows (the engine's tests hold the decision, package
// engine's TestSeedExamples): a GTDT FLOP rewrites flight_gate alone, in
// input order with each item's sequence and the new version; the other
// collections keep their rows; the outbox row carries the state as the
// database holds it; a repeat writes nothing; sequence 0 deletes the rows.
func TestGTDTRewritesOnlyTheGateRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const ca100 = 121112312
	f.mustSnapshot(day9, rec(ca100, "CA100", day9,
		flight.Command{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP260900"},
		flight.Command{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"GTNO": "1", "GATE": "G28"}, {"GTNO": "2", "GATE": "G33"}}},
		flight.Command{Tag: "DELY", Op: flight.OpReplace, Items: []flight.Item{{"CODE": "81", "DURA": "20", "TEXT": "ATC"}}},
	))
	before := f.flights()[ca100]
	gtdt := flight.Commands{FLID: ca100, Cmds: []flight.Command{{Tag: "GTDT", Op: flight.OpReplace,
		Items: []flight.Item{{"GTNO": "1", "GATE": "A1", "GTYP": "D"}, {"GTNO": "3", "GATE": "B2", "GTYP": "I"}}}}}

	out, err := f.increment("GTDT", gtdt)
	if err != nil {
		t.Fatal(err)
	}
	after := f.flights()[ca100]
	if after.StateVersion <= before.StateVersion || after.StateVersion != out.Versions[ca100] || after.LastMessageID != f.msgID ||
		after.OperationDay != day9 {
		t.Fatalf("version %d → %d (outcome %d), last message %d, day %q", before.StateVersion, after.StateVersion, out.Versions[ca100],
			after.LastMessageID, after.OperationDay)
	}

	rows, err := f.conn.Query(t.Context(), `SELECT ordinal, source_seq, gate, gtyp, record_version FROM flight_gate WHERE flid = $1 ORDER BY ordinal`, ca100)
	if err != nil {
		t.Fatal(err)
	}
	gates, err := pgx.CollectRows(rows, pgx.RowToStructByPos[gateRow])
	if err != nil {
		t.Fatal(err)
	}
	wantRows := []gateRow{{1, "1", "A1", "D", after.StateVersion}, {2, "3", "B2", "I", after.StateVersion}}
	if diff := cmp.Diff(wantRows, gates); diff != "" {
		t.Fatalf("flight_gate rows (-want +got):\n%s", diff)
	}
	// Only the changed collection was rewritten.
	if n := f.count(`SELECT count(*) FROM flight_delay WHERE flid = $1 AND record_version = $2`, ca100, before.StateVersion); n != 1 {
		t.Fatalf("DELY row was rewritten (%d rows at the old version)", n)
	}

	ev := f.events(f.msgID)
	if len(ev) != 2 {
		t.Fatalf("events %+v", ev)
	}
	for _, e := range ev {
		if e.Kind != store.KindState {
			continue
		}
		doc, _ := flight.CanonicalJSON(after)
		if e.Payload != string(doc) {
			t.Errorf("payload is not the committed state:\n%s\n%s", e.Payload, doc)
		}
	}

	// The same GTDT again writes nothing: no version, no event.
	out, err = f.increment("GTDT", gtdt)
	if err != nil || out.Unchanged != 1 || len(f.events(f.msgID)) != 0 || f.flights()[ca100].StateVersion != after.StateVersion {
		t.Fatalf("repeat: %v %+v", err, out)
	}
	// Sequence 0 clears the gates.
	if _, err := f.increment("GTDT", flight.Commands{FLID: ca100, Cmds: []flight.Command{{Tag: "GTDT", Op: flight.OpClear}}}); err != nil {
		t.Fatal(err)
	}
	if f.count(`SELECT count(*) FROM flight_gate WHERE flid = $1`, ca100) != 0 {
		t.Fatal("gates left after the clear")
	}
	if ev := f.events(f.msgID); len(ev) != 2 || strings.Contains(ev[0].Payload, "GTDT") {
		t.Fatalf("clear events %+v", ev)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestIncrementCreatesUnknownFlightWithNullDay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	out, err := f.increment("ESTT", flight.Commands{FLID: 77, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261000"}}})
	if err != nil || !slices.Equal(out.Created, fl(77)) {
		t.Fatalf("%v %+v", err, out)
	}
	got := f.flights()[77]
	if got.OperationDay != "" || got.Scalars["ESTT"] != "09SEP261000" {
		t.Fatalf("%+v", got)
	}
	// Two records for one flight in one message apply in order.
	_, err = f.increment("ESTT",
		flight.Commands{FLID: 77, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261100"}}},
		flight.Commands{FLID: 77, Cmds: []flight.Command{{Tag: "ACTT", Op: flight.OpSet, Value: "09SEP261105"}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	got = f.flights()[77]
	// Each changed record is its own version and notice, in record order
	// (the pump decides messages the same way); only the newest version
	// carries the state: one outbox row each, the first a notice alone.
	ev := f.events(f.msgID)
	if got.Scalars["ESTT"] != "09SEP261100" || got.Scalars["ACTT"] != "09SEP261105" || len(ev) != 3 {
		t.Fatalf("%+v events %d", got.Scalars, len(ev))
	}
	if ev[0].Kind != store.KindNotice || ev[1].Kind != store.KindState || ev[2].Kind != store.KindNotice ||
		ev[0].Version >= ev[1].Version || ev[1].Version != got.StateVersion || ev[2].Version != got.StateVersion ||
		strings.Contains(ev[0].Payload, "ACTT") || !strings.Contains(ev[2].Payload, "ACTT") || !strings.Contains(ev[1].Payload, `"ACTT":"09SEP261105"`) {
		t.Fatalf("record order not kept: %+v", ev)
	}
	if n := f.count(`SELECT count(*) FROM msg_event WHERE message_id = $1`, f.msgID); n != 2 {
		t.Fatalf("%d outbox rows, want 2 (one per changed record)", n)
	}
	// A later full-day snapshot sets the day.
	f.mustSnapshot(day9, rec(77, "CA77", day9))
	if f.flights()[77].OperationDay != day9 {
		t.Fatal("day not set")
	}
}

// FDEL as rows (the engine's tests hold the decision): the main row, its
// child rows and its roster entry are gone, the day's version is not
// touched, the tombstone is queued; a repeat writes nothing; a re-created
// flight's version rises past the tombstone's (one sequence).
func TestFDELRemovesTheFlightsRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.mustSnapshot(day9, rec(1, "CA1", day9, flight.Command{Tag: "ROUT", Op: flight.OpReplace,
		Items: []flight.Item{{"RTNO": "1", "APCD": "PEK"}}}), rec(2, "CA2", day9))
	v := f.flights()[1].StateVersion
	genBefore := f.version(day9)

	out, err := f.fdel(1, 99)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Missing, fl(99)) || out.Versions[1] <= v {
		t.Fatalf("%+v", out)
	}
	type left struct {
		Flight      bool
		RoutePoints int
	}
	_, ok := f.flights()[1]
	if diff := cmp.Diff(left{}, left{ok, f.count(`SELECT count(*) FROM flight_route_point WHERE flid = 1`)}); diff != "" {
		t.Fatalf("flight 1 left (-want +got):\n%s", diff)
	}
	if !slices.Equal(f.roster(day9), fl(2)) || f.version(day9) != genBefore {
		t.Fatalf("roster %v version %d", f.roster(day9), f.version(day9))
	}
	ev := f.events(f.msgID)
	if len(ev) != 2 || ev[0].Payload != `{"DELETED":true,"FLID":"1","STATE_VERSION":`+itoa(out.Versions[1])+`}` {
		t.Fatalf("events %+v", ev)
	}
	// Missing FLID: idempotent success with no event.
	out, err = f.fdel(1)
	if err != nil || !slices.Equal(out.Missing, fl(1)) || len(f.events(f.msgID)) != 0 {
		t.Fatalf("repeat FDEL: %v %+v", err, out)
	}
	// Re-created later, its versions keep rising past the tombstone.
	tomb := f.count(`SELECT max(state_version) FROM msg_event WHERE flid = 1`)
	if _, err := f.increment("ESTT", flight.Commands{FLID: 1, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261000"}}}); err != nil {
		t.Fatal(err)
	}
	if got := f.flights()[1].StateVersion; got <= int64(tomb) {
		t.Fatalf("re-created version %d not above tombstone %d", got, tomb)
	}
	// The next snapshot of 9/9 does not count the deleted flight again.
	if out := f.mustSnapshot(day9, rec(2, "CA2", day9)); len(out.Deleted) != 0 {
		t.Fatalf("deleted again: %v", out.Deleted)
	}
}

// Every kind of field survives a write and a consistent read unchanged.
func TestEveryFieldKindRoundTrips(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var cmds []flight.Command
	for _, spec := range flight.Fields() {
		switch spec.Kind {
		case flight.KindScalar:
			v := "v-" + spec.Tag
			if spec.TypedTimeColumn != "" {
				v = "09SEP261230"
			}
			cmds = append(cmds, flight.Command{Tag: spec.Tag, Op: flight.OpSet, Value: v})
		case flight.KindCollection:
			item := flight.Item{"X-UNKNOWN": "kept", "EMPTY": ""}
			if spec.SeqAttr != "" {
				item[spec.SeqAttr] = "7"
			}
			for _, c := range spec.ItemColumns {
				item[c] = spec.Tag + "-" + c
			}
			if spec.TextColumn != "" {
				item[flight.TextKey] = "text of " + spec.Tag
			}
			second := flight.Item{"ONLY": "one"}
			cmds = append(cmds, flight.Command{Tag: spec.Tag, Op: flight.OpReplace, Items: []flight.Item{item, second}})
		case flight.KindAnomaly:
			a := flight.Item{flight.TextKey: "why", "EXTRA": "x"}
			for _, c := range spec.ItemColumns {
				a[c] = c + "-value"
			}
			cmds = append(cmds, flight.Command{Tag: spec.Tag, Op: flight.OpSet, Anomaly: a})
		case flight.KindRecord:
			cmds = append(cmds, flight.Command{Tag: spec.Tag, Op: flight.OpReplace,
				Items: []flight.Item{{flight.TextKey: "t"}, {"CHILD": "c", "ATTR": "a"}}})
		}
	}
	in := flight.Commands{FLID: 555, Cmds: cmds}
	if _, err := f.increment("ADFT", in); err != nil {
		t.Fatal(err)
	}
	want, _, err := flight.Apply(flight.NewState(555), in)
	if err != nil {
		t.Fatal(err)
	}
	got := f.flights()[555]
	want.StateVersion, want.LastMessageID, want.UpdatedAt = got.StateVersion, got.LastMessageID, got.UpdatedAt
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("read back (-want +got):\n%s", diff)
	}
	var sodt string
	if err := f.conn.QueryRow(t.Context(), `SELECT to_char(sodt_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') FROM flight_schd WHERE flid = 555`).Scan(&sodt); err != nil {
		t.Fatal(err)
	}
	if sodt != "2026-09-09 04:30" {
		t.Fatalf("sodt_utc = %s, want 12:30 Shanghai = 04:30 UTC", sodt)
	}
	// Export of one flight by FLID and by day agree.
	id := flight.FLID(555)
	one, err := f.store.ReadFlights(t.Context(), store.Filter{FLID: &id})
	if err != nil || len(one) != 1 || cmp.Diff(got, one[0]) != "" {
		t.Fatalf("by FLID: %v %d", err, len(one))
	}
	none, err := f.store.ReadFlights(t.Context(), store.Filter{Day: day9})
	if err != nil || len(none) != 0 {
		t.Fatalf("by day: a NULL-day flight was returned: %v %d", err, len(none))
	}
}

// Every event of a working set is written, for a large set (200 flights,
// 400 events: a batch of FLOPs) as for a few, through WriteSet (a set
// flushed before a snapshot) and through FinishBatch (the end of a batch)
// alike: each flight's state and notice, in record order.
func TestManyEventsAreAllWritten(t *testing.T) {
	t.Parallel()
	records := func(first flight.FLID, n int) []flight.Commands {
		out := make([]flight.Commands, n)
		for i := range out {
			out[i] = flight.Commands{FLID: first + flight.FLID(i), Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261000"}}}
		}
		return out
	}
	check := func(f *fixture, how string, msgID int64, recs []flight.Commands) {
		t.Helper()
		states := f.flights()
		ev := f.events(msgID)
		if len(ev) != 2*len(recs) {
			t.Fatalf("%s: %d events for %d changed flights", how, len(ev), len(recs))
		}
		for i, r := range recs {
			st, sch := states[r.FLID], ev[2*i]
			doc, err := flight.CanonicalJSON(st)
			if err != nil {
				t.Fatal(err)
			}
			if sch.Kind != store.KindState || sch.Event != store.EventUpsert || sch.FLID != int64(r.FLID) ||
				sch.Version != st.StateVersion || sch.Payload != string(doc) {
				t.Fatalf("%s: event %d is %+v, want the state of flight %s at version %d", how, 2*i, sch, r.FLID, st.StateVersion)
			}
			if n := ev[2*i+1]; n.Kind != store.KindNotice || n.FLID != int64(r.FLID) || n.Version != st.StateVersion {
				t.Fatalf("%s: event %d is %+v, want the notice of flight %s", how, 2*i+1, n, r.FLID)
			}
		}
	}

	f := newFixture(t)
	many := records(1000, 200)
	if _, err := f.increment("ESTT", many...); err != nil {
		t.Fatal(err)
	}
	check(f, "WriteSet", f.msgID, many)

	more := records(2000, 200)
	meta := f.nextMeta("FLOP", "ESTT")
	if err := f.inTx(func(tx *store.Tx) error {
		set, err := tx.LoadSet(t.Context(), flids(more), len(more), nil)
		if err != nil {
			return err
		}
		if _, err := set.Increment(meta, more); err != nil {
			return err
		}
		return tx.FinishBatch(t.Context(), nil, set, nil)
	}); err != nil {
		t.Fatal(err)
	}
	check(f, "FinishBatch", meta.MessageID, more)

	few := records(3000, 3)
	if _, err := f.increment("ESTT", few...); err != nil {
		t.Fatal(err)
	}
	check(f, "a few in the batch", f.msgID, few)
}

func flids(recs []flight.Commands) []flight.FLID {
	out := make([]flight.FLID, len(recs))
	for i, r := range recs {
		out[i] = r.FLID
	}
	return out
}
