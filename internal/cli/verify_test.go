package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/verify"
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

// lastVerification reads the day's recorded verification: outcome,
// flights, differing, reason, ran_by.
func lastVerification(t *testing.T, dsn, day string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var got string
	err = conn.QueryRow(ctx, `SELECT concat_ws(' ', outcome, flights, differing, messages, ran_by, reason) FROM day_verification WHERE operation_day = $1::date`, day).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return "none"
	}
	if err != nil {
		t.Fatal(err)
	}
	return got
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
	if got := lastVerification(t, dsn, "2026-09-09"); got != "IDENTICAL 2 0 4 cli " {
		t.Fatalf("recorded verification %q, want IDENTICAL of 2 flights, 4 messages, by cli", got)
	}
	// The ledger the pump mirrors into FlightFeedDays carries it; the
	// ledger command's lines do not change.
	s, err := store.Open(context.Background(), dsn, store.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ledger, err := s.Ledger(context.Background())
	if err != nil || len(ledger) != 1 || ledger[0].Verification == nil || ledger[0].Verification.Outcome != verify.OutcomeIdentical ||
		ledger[0].Verification.FinishedAt.IsZero() {
		t.Fatalf("ledger %+v (%v): want 2026-09-09 with its IDENTICAL verification", ledger, err)
	}
	if code, out, _ := runCLI("ledger", "--config", cfg); code != 0 || strings.Contains(out, "verif") || strings.Count(out, "\n") != 1 {
		t.Fatalf("ledger: exit %d: %s", code, out)
	}

	// -o json: the outcome as a document, the comparison in it.
	code, out, errOut = runCLI("verify", "--config", cfg, "--day", "2026-09-09", "-o", "json")
	var doc struct {
		Day, Outcome     string
		Flights          int
		Messages         int
		Report           *verify.Report
		StartedAt, RanBy string
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.Day != "2026-09-09" || doc.Outcome != "IDENTICAL" ||
		doc.Flights != 2 || doc.Messages != 4 || doc.Report == nil || doc.Report.Flights != 2 || doc.RanBy != "cli" || doc.StartedAt == "" {
		t.Fatalf("verify -o json: exit %d (%v)\n%s%s", code, err, out, errOut)
	}

	// One verification at a time per feed: while another holds the lock,
	// verify refuses at once (exit 1) and records nothing new.
	unlock, err := store.LockVerification(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	execPG(t, dsn, `DELETE FROM day_verification`)
	code, out, errOut = runCLI("verify", "--config", cfg, "--day", "2026-09-09")
	unlock()
	if code != 1 || !strings.Contains(errOut, "another verification of this feed is running") {
		t.Fatalf("verify while another runs: exit %d\n%s%s", code, out, errOut)
	}
	if got := lastVerification(t, dsn, "2026-09-09"); got != "none" {
		t.Fatalf("a refused verification recorded %q", got)
	}

	// A flight edited by hand is found: its field, both values, and no
	// message parts.
	execPG(t, dsn, `UPDATE flight_schd SET estt = '09SEP261111', state_version = nextval('state_version_seq') WHERE flid = 2`)
	code, out, errOut = runCLI("verify", "--config", cfg, "--day", "2026-09-09")
	if code != 3 || !strings.Contains(out, "flight 2 differs\n  ESTT Replace \"09SEP261010\" -> \"09SEP261111\"\n") ||
		!strings.Contains(out, "no message parts") || strings.Contains(out, "flight 1 ") {
		t.Fatalf("verify a hand-edited flight: exit %d\n%s%s", code, out, errOut)
	}
	if got := lastVerification(t, dsn, "2026-09-09"); got != "DIFFERS 2 1 4 cli " {
		t.Fatalf("recorded verification %q, want DIFFERS, 1 of 2 flights", got)
	}

	// An archive pruned of a message the feed processed: not verifiable.
	execPG(t, dsn, `DELETE FROM msg_archive WHERE message_id = (SELECT min(message_id) FROM msg_archive)`)
	code, out, errOut = runCLI("verify", "--config", cfg, "--day", "2026-09-09")
	if code != 4 || !strings.Contains(errOut, "2026-09-09 NOT VERIFIABLE: message 1 ") || !strings.Contains(errOut, "not in the archive") {
		t.Fatalf("verify a pruned archive: exit %d\n%s%s", code, out, errOut)
	}
	if got := lastVerification(t, dsn, "2026-09-09"); !strings.HasPrefix(got, "NOT_VERIFIABLE 0 0 0 cli message 1 ") {
		t.Fatalf("recorded verification %q, want NOT_VERIFIABLE with its reason", got)
	}
}

// A RESP answering the pump's own live RQFD is the day's full-day
// snapshot; the rebuild, which sends no request, attributes it from the
// live request log and rebuilds the day identical, ledger included. Were
// the request history not replayed, the RESP would be unsolicited, the
// rebuilt day would have no ledger and verify would say it differs.
func TestVerifyRebuildsAnAnsweredRequestIdentical(t *testing.T) {
	mailboxDSN, databaseDSN, broker := mailboxtest.NewMailbox(t), pgtest.New(t), kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")[0]
	cfg := filepath.Join(t.TempDir(), "feed.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms}
database: {dsn: %q}
kafka: {brokers: [%q]}
requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}
`, mailboxDSN, databaseDSN, broker)), 0o600); err != nil {
		t.Fatal(err)
	}
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(shanghai)
	day, sis := now.Format(time.DateOnly), strings.ToUpper(now.Format("02Jan06"))
	// The pump asks for today at its start.
	if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
		t.Fatalf("pump --drain: exit %d: %s", code, errOut)
	}
	mbox, err := sql.Open("mysql", mailboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	var rqfd string
	if err := mbox.QueryRow(`SELECT COUTMSGS_CLOB_MSG FROM COUTMSGS`).Scan(&rqfd); err != nil || !strings.Contains(rqfd, "<TYPE>RQFD</TYPE>") ||
		!strings.Contains(rqfd, "<STDB>"+sis+"0000</STDB>") {
		t.Fatalf("the pump's request for %s: %v\n%s", day, err, rqfd)
	}
	meta := func(seqn int, typ, styp string) string {
		return fmt.Sprintf(`<META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DDTM>%s</DDTM><TYPE>%s</TYPE><STYP>%s</STYP></META>`, seqn, now.Format("20060102150405"), typ, styp)
	}
	received := time.Now().UTC().Add(time.Second)
	for i, body := range []string{
		`<MSG>` + meta(1, "SCHD", "RESP") + `<SCHD><RECS>2</RECS><FLTR><FLID>1</FLID><FLNO>CA1</FLNO><SODT>` + sis + `0800</SODT></FLTR>` +
			`<FLTR><FLID>2</FLID><FLNO>CA2</FLNO><SODT>` + sis + `0900</SODT></FLTR></SCHD></MSG>`,
		`<MSG>` + meta(2, "FLOP", "ESTT") + `<FLOP><FLID>2</FLID><ESTT>` + sis + `0930</ESTT></FLOP></MSG>`,
	} {
		mailboxtest.Write(t, mbox, mailbox.Inbound{Received: received.Add(time.Duration(i) * time.Second), Body: body})
	}
	if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
		t.Fatalf("pump --drain: exit %d: %s", code, errOut)
	}
	// Live: the RESP completed the request and set the day's ledger.
	s, err := store.Open(context.Background(), databaseDSN, store.Options{Location: shanghai})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if l, err := s.DayLedger(context.Background(), day); err != nil || !l.Present || len(l.Roster) != 2 {
		t.Fatalf("served ledger of %s: %+v (%v): the RESP was not the day's full-day snapshot", day, l, err)
	}

	code, out, errOut := runCLI("verify", "--config", cfg, "--day", day, "-o", "json")
	var res struct {
		Outcome string
		Flights int
		Report  *verify.Report
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Outcome != "IDENTICAL" || res.Flights != 2 || res.Report == nil || res.Report.Ledger != nil {
		t.Fatalf("verify %s: exit %d (%v)\n%s%s", day, code, err, out, errOut)
	}
}
