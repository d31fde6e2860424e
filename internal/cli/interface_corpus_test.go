package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// TestInterfaceCorpusDrains drains the interface corpus (one message of
// every type and FLOP subtype the interface defines, internal/sis
// testdata/interface) with `flightfeed pump --config F --drain`, as a
// user's mailbox would hold them: every flight message
// SUCCEEDED, every reference message applied, every other known type
// SKIPPED (NOT_APPLIED), each on its first attempt; nothing FAILED, nothing
// DEAD.
func TestInterfaceCorpusDrains(t *testing.T) {
	files, err := filepath.Glob("../sis/testdata/interface/*.xml")
	if err != nil || len(files) < 100 {
		t.Fatalf("interface corpus: %d files, %v", len(files), err)
	}
	slices.Sort(files)
	var bodies []string
	var msgs []*sis.Message
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := sis.Decode(raw, sis.Options{})
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		bodies, msgs = append(bodies, string(raw)), append(msgs, msg)
	}
	mdsn, pdsn := mailboxtest.NewMailbox(t), pgtest.New(t)
	mbox, err := sql.Open("mysql", mdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	mailboxtest.Write(t, mbox, mailboxtest.Bodies(bodies...)...)
	cfg := writeFeed(t, mdsn, pdsn, kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")[0])
	if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
		t.Fatalf("pump --drain: exit %d\n%s", code, errOut)
	}

	// Every row's result, as the mailbox holds it, by kind.
	results := strings.Split(strings.TrimSpace(mailboxtest.Results(t, mbox)), "\n")
	if len(results) != len(msgs) {
		t.Fatalf("%d mailbox rows, want %d", len(results), len(msgs))
	}
	for i, line := range results {
		m := msgs[i]
		var want string
		switch m.Kind {
		case sis.KindNotApplied:
			want = "processed=true SKIPPED NOT_APPLIED: " + m.NotApplied.Reason
		default:
			want = "processed=true SUCCEEDED "
		}
		if got := line[strings.Index(line, " ")+1:]; got != want {
			t.Errorf("%s %s/%s: %q, want %q", filepath.Base(files[i]), m.Meta.Type, m.Meta.Styp, got, want)
		}
	}

	ctx := context.Background()
	db, err := pgx.Connect(ctx, pdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close(ctx) }()
	var retried, notOnce int
	if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'FAILED'), count(*) FILTER (WHERE attempts <> 1) FROM proc_state`).
		Scan(&retried, &notOnce); err != nil {
		t.Fatal(err)
	}
	if retried != 0 || notOnce != 0 {
		t.Fatalf("proc_state: %d FAILED, %d messages not finished on their first attempt", retried, notOnce)
	}

	// The reference store holds what the messages say, type by type: a
	// whole list replaces, ADD/UPD upsert, DEL deletes.
	want := map[string][]string{}
	for _, m := range msgs {
		if m.Kind != sis.KindReference {
			continue
		}
		ref := m.Reference
		keys := want[ref.Kind.Type]
		if ref.Op == sis.RefReplace {
			keys = nil
		}
		for _, r := range ref.Records {
			if ref.Op == sis.RefDelete {
				keys = slices.DeleteFunc(keys, func(k string) bool { return k == r.Key })
			} else if !slices.Contains(keys, r.Key) {
				keys = append(keys, r.Key)
			}
		}
		slices.Sort(keys)
		want[ref.Kind.Type] = keys
	}
	if len(want) != len(sis.ReferenceKinds()) {
		t.Fatalf("the corpus holds %d reference types, the interface %d", len(want), len(sis.ReferenceKinds()))
	}
	rows, err := db.Query(ctx, `SELECT kind, array_agg(key ORDER BY key) FROM ref_record GROUP BY kind`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for rows.Next() {
		var kind string
		var keys []string
		if err := rows.Scan(&kind, &keys); err != nil {
			t.Fatal(err)
		}
		got[kind] = keys
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for typ, keys := range want {
		if fmt.Sprint(keys) != fmt.Sprint(got[typ]) {
			t.Errorf("%s: stored keys %v, want %v", typ, got[typ], keys)
		}
	}

	// The vendor's shapes that went DEAD before: a TOBT without TOBT
	// cleared it, an HNAG with FHAG alone set it and cleared the others, an
	// EXSS carried EXSC and cleared EXSR; the FDEL deleted its flight.
	code, out, errOut := runCLI("export", "--config", cfg)
	if code != 0 {
		t.Fatalf("export: exit %d %s", code, errOut)
	}
	flights := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatal(err)
		}
		flights[fmt.Sprint(doc["FLID"])] = doc
	}
	if _, ok := flights["90005"]; ok {
		t.Error("FDEL left flight 90005")
	}
	f1, f2 := flights["90001"], flights["90002"]
	if f1 == nil || f2 == nil {
		t.Fatalf("flights 90001, 90002 missing from the export:\n%s", out)
	}
	if _, ok := f1["TOBT"]; ok {
		t.Errorf("TOBT without its field did not clear it: %v", f1["TOBT"])
	}
	for k, v := range map[string]any{"FHAG": "1002", "EXSC": "CNL", "PHAG": nil, "MHAG": nil, "EXSR": nil} {
		if got, ok := f2[k]; (v == nil && ok) || (v != nil && got != v) {
			t.Errorf("flight 90002 %s = %v, want %v", k, got, v)
		}
	}
	if f1["PHAG"] != "1001" || f1["VIPR"] != "1" || f1["EXSR"] != "late inbound" {
		t.Errorf("flight 90001's grouped fields: PHAG %v VIPR %v EXSR %v", f1["PHAG"], f1["VIPR"], f1["EXSR"])
	}
}
