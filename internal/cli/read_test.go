package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

func TestExportAndLedger(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.New(t)
	cfg := writeConfig(t, dsn)

	// Before migrate the commands name the fix.
	code, _, errOut := runCLI("export", "--config", cfg)
	if code != exitFailed || !strings.Contains(errOut, "flightfeed migrate") {
		t.Fatalf("unmigrated export: exit %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("migrate", "--config", cfg); code != 0 {
		t.Fatal(errOut)
	}
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	epoch, err := s.TakeEpoch(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.Begin(ctx, epoch)
	if err != nil {
		t.Fatal(err)
	}
	record := func(id flight.FLID, flno string) store.SnapshotRecord {
		return store.SnapshotRecord{Day: "2026-09-09", Cmds: flight.Commands{FLID: id, Full: true, Cmds: []flight.Command{
			{Tag: "FLNO", Op: flight.OpSet, Value: flno},
			{Tag: "GTDT", Op: flight.OpReplace, Items: []flight.Item{{"GTNO": "1", "GATE": "A1"}}},
		}}}
	}
	if _, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: 42, Type: "SCHD", Styp: "RESP"},
		store.Snapshot{FullDay: true, Day: "2026-09-09", Records: []store.SnapshotRecord{record(20, "MU2"), record(3, "CA1")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.ApplyIncrement(ctx, tx, store.Meta{MessageID: 43, Type: "FLOP", Styp: "ESTT"},
		[]flight.Commands{{FLID: 100, Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP261000"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	states, err := s.ReadFlights(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := exportOf(t, states)

	code, out, errOut := runCLI("export", "--config", cfg)
	if code != 0 {
		t.Fatal(errOut)
	}
	if out != want {
		t.Fatalf("export:\n%s\nwant:\n%s", out, want)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"FLID":"3"`) || !strings.Contains(lines[1], `"FLID":"20"`) ||
		!strings.Contains(lines[0], `"GTDT":[{"GATE":"A1","GTNO":"1"}]`) {
		t.Fatalf("export is not sorted by FLID or lacks collections:\n%s", out)
	}
	_, out, _ = runCLI("export", "--config", cfg, "--day", "2026-09-09")
	if strings.Count(out, "\n") != 2 || strings.Contains(out, `"FLID":"100"`) {
		t.Fatalf("export --day:\n%s", out)
	}
	_, out, _ = runCLI("export", "--config", cfg, "--flid", "100")
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `"ESTT":"09SEP261000"`) || strings.Contains(out, "OPERATION_DAY") {
		t.Fatalf("export --flid:\n%s", out)
	}

	code, out, errOut = runCLI("ledger", "--config", cfg)
	if code != 0 {
		t.Fatal(errOut)
	}
	if out != `{"day":"2026-09-09","version":1,"last_message_id":42,"flights":2}`+"\n" {
		t.Fatalf("ledger: %q", out)
	}

	for _, args := range [][]string{{"--flid", "12A"}, {"--flid", "1234567890123"}, {"--day", "09SEP26"}} {
		code, _, errOut := runCLI(append([]string{"export", "--config", cfg}, args...)...)
		if code != exitUsage {
			t.Errorf("export %v: exit %d %q", args, code, errOut)
		}
	}
}

// export reads keyset pages of exportPageSize in one snapshot: over more
// flights than two pages hold, it prints exactly what one read of them all
// renders, every flight once, in FLID order.
func TestExportOverSeveralPagesPrintsTheWholeRead(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.New(t)
	cfg := writeConfig(t, dsn)
	if code, _, errOut := runCLI("migrate", "--config", cfg); code != 0 {
		t.Fatal(errOut)
	}
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	epoch, err := s.TakeEpoch(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*exportPageSize + 234
	var records []store.SnapshotRecord
	for i := range n {
		// FLIDs not in insertion order, with gaps.
		id := flight.FLID((i*7919)%n*3 + 1)
		records = append(records, storetest.Record(id, "CA"+id.String(), "2026-09-09"))
	}
	tx, err := s.Begin(ctx, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: 1, Type: "SCHD", Styp: "RESP"},
		store.Snapshot{FullDay: true, Day: "2026-09-09", Records: records}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	states, err := s.ReadFlights(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != n {
		t.Fatalf("%d flights written, want %d", len(states), n)
	}
	want := exportOf(t, states)
	code, out, errOut := runCLI("export", "--config", cfg)
	if code != 0 {
		t.Fatal(errOut)
	}
	if out != want {
		t.Fatalf("export of %d flights differs from one read of them (%d and %d bytes)", n, len(out), len(want))
	}
}

// exportOf is what `flightfeed export` prints for states: one canonical
// JSON document a line.
func exportOf(t *testing.T, states []flight.State) string {
	t.Helper()
	var out strings.Builder
	for _, st := range states {
		doc, err := flight.CanonicalJSON(st)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(doc)
		out.WriteByte('\n')
	}
	return out.String()
}
