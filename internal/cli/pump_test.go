package cli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

func TestPumpDrainThenExport(t *testing.T) {
	mdsn, pdsn := mailboxtest.NewMailbox(t), pgtest.New(t)
	cfg := filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms, batchSize: 200}
database: {dsn: %q}
kafka: {brokers: [%q], topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}
requests: {disabled: true}
`, mdsn, pdsn, kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")[0])
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	mbox, err := sql.Open("mysql", mdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	msg := `<MSG><META><SNDR>AODB</SNDR><SEQN>42</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>GTDT</STYP></META>` +
		`<FLOP><FLID>121112312</FLID><GTDT GTNO="1"><GATE>A1</GATE><GTYP>D</GTYP></GTDT></FLOP></MSG>`
	mailboxtest.Write(t, mbox, mailboxtest.Bodies(msg, "not xml")...)

	code, _, errOut := runCLI("pump", "--config", cfg, "--drain")
	if code != 0 {
		t.Fatalf("pump --drain: exit %d\n%s", code, errOut)
	}
	var results []string
	rows, err := mbox.QueryContext(context.Background(), `SELECT CMINMSGS_PROC_RESULT FROM CMINMSGS ORDER BY CMINMSGS_ID`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var r sql.NullString
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		results = append(results, r.String)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(results, ",") != "SUCCEEDED,DEAD" {
		t.Fatalf("mailbox results %v", results)
	}
	code, out, errOut := runCLI("export", "--config", cfg)
	if code != 0 || !strings.Contains(out, `"GTDT":[{"GATE":"A1","GTNO":"1","GTYP":"D"}]`) || !strings.Contains(out, `"FLID":"121112312"`) {
		t.Fatalf("export after the pump: exit %d %s\n%s", code, errOut, out)
	}
}
