package cli

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// History is decided on the operation day (processing rules R8.1), end to end: a
// flight of tomorrow that the AODB cancelled three days ago (older than
// history.cancelledAge, 48 h) stays in current state while its day is not
// over. Three rounds of the real pump — each answering tomorrow's request
// with a RESP that holds the flight, each starting with the history sweep —
// publish it to KAFKA_SCHD once and never delete it: no UPSERT/DELETE
// churn on Kafka.
func TestCancelledInAdvanceFlightDoesNotChurn(t *testing.T) {
	mdsn, pdsn := mailboxtest.NewMailbox(t), pgtest.New(t)
	brokers := kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")
	cfg := filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms}
database: {dsn: %q}
kafka: {brokers: [%q], topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}
requests: {horizon: {from: 1, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}
`, mdsn, pdsn, brokers[0])
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	mbox, err := sql.Open("mysql", mdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()

	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(loc)
	tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 10, 0, 0, 0, loc)
	cancelled := now.Add(-72 * time.Hour)
	const flid = "121112312"
	resp := func(seqn int) string {
		return fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DDTM>%s</DDTM><TYPE>SCHD</TYPE><STYP>RESP</STYP></META>`+
			`<SCHD><RECS>1</RECS><FLTR><FLID>%s</FLID><FLNO>CA100</FLNO><SODT>%s</SODT><CNCL>%s</CNCL></FLTR></SCHD></MSG>`,
			seqn, time.Now().In(loc).Format("20060102150405"), flid, flight.FormatSISTime(tomorrow, loc), flight.FormatSISTime(cancelled, loc))
	}
	for round := 1; round <= 3; round++ {
		mailboxtest.Write(t, mbox, mailboxtest.Bodies(resp(300+round))...)
		if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
			t.Fatalf("round %d: pump --drain: exit %d\n%s", round, code, errOut)
		}
	}

	var upserts, deletes int
	for _, r := range dispatchtest.Records(t, brokers, "KAFKA_SCHD") {
		if r.Key != flid {
			continue
		}
		switch {
		case r.Tombstone():
			deletes++
		default:
			upserts++
		}
	}
	if upserts != 1 || deletes != 0 {
		t.Fatalf("KAFKA_SCHD for the cancelled flight of tomorrow after 3 RESPs: %d upserts, %d deletes; want 1 and 0", upserts, deletes)
	}
	code, out, errOut := runCLI("export", "--config", cfg, "--flid", flid)
	if code != 0 || !strings.Contains(out, `"FLID":"`+flid+`"`) || !strings.Contains(out, `"OPERATION_DAY":"`+tomorrow.Format(time.DateOnly)+`"`) {
		t.Fatalf("export: exit %d %s\n%s", code, errOut, out)
	}
}
