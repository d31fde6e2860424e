package cli

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

func noiseText(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 19))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}

func parkedFeed(t *testing.T, mailboxDSN, databaseDSN, broker string, maxRecordBytes int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms}
database: {dsn: %q}
kafka: {brokers: [%q], maxRecordBytes: %d}
requests: {disabled: true}
`, mailboxDSN, databaseDSN, broker, maxRecordBytes)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Hostile input and a record Kafka refuses for good end `pump --drain`
// with a clear outcome: the messages whose state would be too large for
// the topics are DEAD at the door (STATE_TOO_LARGE), the one with 20,000
// attributes on one item is refused by the decoder, the good one is
// delivered, and an event committed before the topics' limit was lowered
// is PARKED; the drain exits 1 with a one-line summary. `flightfeed parked`
// lists it and, once the topics accept it, `--redeliver all` sends it.
func TestDrainEndsWhenKafkaRefusesForGood(t *testing.T) {
	mailboxDSN, databaseDSN := mailboxtest.NewMailbox(t), pgtest.New(t)
	broker := kafkatest.NewLimited(t, 65536, 1, "KAFKA_SCHD", "KAFKA_MSG")[0]
	cfg := parkedFeed(t, mailboxDSN, databaseDSN, broker, 65536)
	if code, _, errOut := runCLI("migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, errOut)
	}
	// An event committed while the limit was higher: 100 KB of state.
	pg, err := pgx.Connect(t.Context(), databaseDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Close(context.Background()) }()
	big := `{"FLID":"7","REMC":"` + noiseText(1, 100_000) + `","STATE_VERSION":1}`
	if _, err := pg.Exec(t.Context(), `INSERT INTO msg_event (event, flid, state_version, message_id, state)
		VALUES ('UPSERT', 7, 1, 0, $1)`, big); err != nil {
		t.Fatal(err)
	}

	mbox, err := sql.Open("mysql", mailboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	meta := func(seqn int, styp string) string {
		return fmt.Sprintf(`<META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>%s</STYP></META>`, seqn, styp)
	}
	var fields, attrs, children strings.Builder
	for i, tag := range []string{"REMC", "LACL", "BOTM", "FINT", "APPT", "VIPR"} {
		fmt.Fprintf(&fields, "<%s>%s</%s>", tag, noiseText(uint64(10+i), 15_000), tag)
	}
	for i := range 20_000 {
		fmt.Fprintf(&attrs, ` A%d="v"`, i)
	}
	for i := range 5_000 {
		fmt.Fprintf(&children, `<E%d>%s</E%d>`, i, noiseText(uint64(i), 20), i)
	}
	bodies := []string{
		`<MSG>` + meta(1, "REMC") + `<FLOP><FLID>9</FLID>` + fields.String() + `</FLOP></MSG>`,
		`<MSG>` + meta(2, "SRVT") + `<FLOP><FLID>9</FLID><SRVT SRNO="1"` + attrs.String() + `>x</SRVT></FLOP></MSG>`,
		`<MSG>` + meta(3, "SRVT") + `<FLOP><FLID>9</FLID><SRVT SRNO="1">` + children.String() + `</SRVT></FLOP></MSG>`,
		`<MSG>` + meta(4, "ESTT") + `<FLOP><FLID>10</FLID><ESTT>09SEP260930</ESTT></FLOP></MSG>`,
	}
	for i, body := range bodies {
		mailboxtest.Write(t, mbox, mailbox.Inbound{Received: time.Date(2026, 9, 9, 10, 0, i, 0, time.UTC), Body: body})
	}

	// Bounded: the old dispatcher retried the refused record for ever.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	code, _, errOut := runCLIContext(ctx, "pump", "--config", cfg, "--drain")
	if code != 1 || !strings.Contains(errOut, "1 outbox event(s) are PARKED") || !strings.Contains(errOut, "flight 7") ||
		!strings.Contains(errOut, "MESSAGE_TOO_LARGE") || strings.Count(strings.TrimSpace(lastLine(errOut)), "\n") != 0 {
		t.Fatalf("pump --drain: exit %d, stderr:\n%s", code, errOut)
	}
	for id, want := range map[int]string{1: "STATE_TOO_LARGE", 2: "TOO_MANY_ATTRIBUTES", 3: "STATE_TOO_LARGE", 4: ""} {
		var result, note sql.NullString
		if err := mbox.QueryRowContext(t.Context(), `SELECT CMINMSGS_PROC_RESULT, CMINMSGS_PROC_NOTE FROM CMINMSGS WHERE CMINMSGS_ID = ?`, id).Scan(&result, &note); err != nil {
			t.Fatal(err)
		}
		if want == "" && result.String != "SUCCEEDED" || want != "" && (result.String != "DEAD" || !strings.HasPrefix(note.String, want)) {
			t.Errorf("row %d: %s %q, want %s", id, result.String, note.String, want)
		}
	}

	code, out, errOut := runCLI("parked", "--config", cfg, "-o", "json")
	if code != 0 {
		t.Fatalf("parked: exit %d: %s", code, errOut)
	}
	var listed struct {
		ID        int64
		FLID      int64
		Kind      string
		LastError string
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &listed); err != nil || listed.FLID != 7 ||
		listed.Kind != "KAFKA_SCHD" || !strings.Contains(listed.LastError, "MESSAGE_TOO_LARGE") {
		t.Fatalf("parked -o json: %v\n%s", err, out)
	}
	if code, out, _ := runCLI("parked", "--config", cfg); code != 0 || !strings.Contains(out, "MESSAGE_TOO_LARGE") {
		t.Fatalf("parked: exit %d\n%s", code, out)
	}

	// The cause fixed: the topics and the feed accept 1 MiB.
	kafkatest.SetTopicLimit(t, []string{broker}, 1<<20, "KAFKA_SCHD", "KAFKA_MSG")
	cfg = parkedFeed(t, mailboxDSN, databaseDSN, broker, 1<<20)
	if code, out, errOut := runCLI("parked", "--config", cfg, "--redeliver", "all"); code != 0 || !strings.Contains(out, "1 parked event(s) are PENDING again") {
		t.Fatalf("parked --redeliver all: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := runCLIContext(ctx, "pump", "--config", cfg, "--drain"); code != 0 {
		t.Fatalf("pump --drain after the re-delivery: exit %d: %s", code, errOut)
	}
	latest := dispatchtest.Latest(dispatchtest.Records(t, []string{broker}, "KAFKA_SCHD"))
	if string(latest["7"]) != big || latest["10"] == nil {
		t.Fatalf("state topic after the re-delivery holds flights %v", keysOf(latest))
	}
	if code, _, errOut := runCLI("parked", "--config", cfg, "--redeliver", "99"); code != 1 || !strings.Contains(errOut, "not parked") {
		t.Fatalf("parked --redeliver 99: exit %d: %s", code, errOut)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
