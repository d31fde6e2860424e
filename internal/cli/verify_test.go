package cli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// verifyWorld is a feed whose pump processed a scripted day, 2026-09-09:
// a full-day download of two flights, then changes to one of them.
func verifyWorld(t *testing.T) (databaseDSN, cfg string) {
	t.Helper()
	mailboxDSN, databaseDSN, broker := mailboxtest.NewMailbox(t), pgtest.New(t), kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")[0]
	cfg = filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms, dnldFullDay: true}
database: {dsn: %q}
kafka: {brokers: [%q]}
requests: {disabled: true}
`, mailboxDSN, databaseDSN, broker)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	mbox, err := sql.Open("mysql", mailboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	meta := func(seqn int, typ, styp string) string {
		return fmt.Sprintf(`<META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DDTM>20260909101500</DDTM><TYPE>%s</TYPE><STYP>%s</STYP></META>`, seqn, typ, styp)
	}
	for i, body := range []string{
		`<MSG>` + meta(1, "SCHD", "DNLD") + `<SCHD><RECS>2</RECS><FLTR><FLID>1</FLID><SODT>09SEP260800</SODT></FLTR>` +
			`<FLTR><FLID>2</FLID><SODT>09SEP260900</SODT></FLTR></SCHD></MSG>`,
		`<MSG>` + meta(2, "FLOP", "ESTT") + `<FLOP><FLID>1</FLID><ESTT>09SEP260930</ESTT></FLOP></MSG>`,
		`not xml`,
		`<MSG>` + meta(3, "FLOP", "ESTT") + `<FLOP><FLID>2</FLID><ESTT>09SEP261010</ESTT></FLOP></MSG>`,
	} {
		mailboxtest.Write(t, mbox, mailbox.Inbound{Received: time.Date(2026, 9, 9, 10, 0, i, 0, time.UTC), Body: body})
	}
	if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
		t.Fatalf("pump --drain: exit %d: %s", code, errOut)
	}
	return databaseDSN, cfg
}

func execPG(t *testing.T, dsn, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}

func countScratch(t *testing.T, dsn string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'flightfeed_verify_%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestVerifyDay(t *testing.T) {
	dsn, cfg := verifyWorld(t)

	code, out, errOut := runCLI("verify", "--config", cfg, "--day", "2026-09-09")
	if code != 0 || out != "2026-09-09: 2 flights, identical (4 messages replayed)\n" {
		t.Fatalf("verify a scripted day: exit %d\n%s%s", code, out, errOut)
	}
	if n := countScratch(t, dsn); n != 0 {
		t.Fatalf("%d scratch schemas left behind", n)
	}

	// A flight edited by hand is found: its field, both values, and no
	// message parts.
	execPG(t, dsn, `UPDATE flight_schd SET estt = '09SEP261111', state_version = nextval('state_version_seq') WHERE flid = 2`)
	code, out, errOut = runCLI("verify", "--config", cfg, "--day", "2026-09-09")
	if code != 1 || !strings.Contains(out, "flight 2 differs\n  ESTT Replace \"09SEP261010\" -> \"09SEP261111\"\n") ||
		!strings.Contains(out, "no message parts") || strings.Contains(out, "flight 1 ") {
		t.Fatalf("verify a hand-edited flight: exit %d\n%s%s", code, out, errOut)
	}

	// An archive pruned of a message the feed processed: not verifiable.
	execPG(t, dsn, `DELETE FROM msg_archive WHERE message_id = (SELECT min(message_id) FROM msg_archive)`)
	code, out, errOut = runCLI("verify", "--config", cfg, "--day", "2026-09-09")
	if code != 2 || !strings.Contains(errOut, "2026-09-09 NOT VERIFIABLE: message 1 ") || !strings.Contains(errOut, "not in the archive") {
		t.Fatalf("verify a pruned archive: exit %d\n%s%s", code, out, errOut)
	}
}
