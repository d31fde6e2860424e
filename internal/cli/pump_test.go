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

// `flightfeed pump --config` refuses TLS without certificate verification
// with one line naming the field, the setting and the address (exit 2),
// and with the file's opt-in logs what the operator would show as the
// warning conditions UnverifiedTLSDependency and WeakDatabaseAuth before
// it dials anything.
func TestPumpConfigUnverifiedTLSAndWeakAuth(t *testing.T) {
	const marker = "Zq9Marker"
	write := func(t *testing.T, mailbox, mailboxTLS, database, databaseTLS string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "feed.yaml")
		doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms%s}
database: {dsn: %q%s}
kafka: {brokers: ["127.0.0.1:1"]}
requests: {disabled: true}
`, mailbox, mailboxTLS, database, databaseTLS)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, c := range []struct {
		name                                 string
		mailbox, mailboxTLS, database, dbTLS string
		exit                                 int
		want                                 []string
	}{
		{"database sslmode=require refused", "root@tcp(127.0.0.1:1)/mbx", "",
			"postgres://postgres:" + marker + "@db.invalid:5432/ff?sslmode=require&connect_timeout=2", "", exitUsage,
			[]string{`database.dsn: Invalid value: "postgres://***@db.invalid:5432/ff?sslmode=require&connect_timeout=2": unverified TLS (sslmode=require) to db.invalid:5432 is refused`}},
		{"mailbox tls=skip-verify refused", "root:" + marker + "@tcp(127.0.0.1:1)/mbx?tls=skip-verify", "",
			"postgres://postgres@127.0.0.1:1/ff?sslmode=disable&connect_timeout=2", "", exitUsage,
			[]string{"option tls=skip-verify is refused: it accepts any server certificate"}},
		{"opted in: warnings logged", "root:" + marker + "@tcp(127.0.0.1:1)/mbx?tls=skip-verify&timeout=2s", ", tls: {mode: unverified}",
			"postgres://postgres:" + marker + "@db.invalid:5432/ff?sslmode=require&connect_timeout=2&require_auth=scram-sha-256,md5", ", tls: {mode: unverified}", exitFailed,
			[]string{`"condition":"UnverifiedTLSDependency"`, "mailbox 127.0.0.1:1 (tls=skip-verify); database db.invalid:5432 (sslmode=require)",
				`"condition":"WeakDatabaseAuth"`, "database require_auth=scram-sha-256,md5 permits md5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			code, out, errOut := runCLIContext(ctx, "pump", "--drain", "--config", write(t, c.mailbox, c.mailboxTLS, c.database, c.dbTLS))
			if code != c.exit {
				t.Fatalf("exit %d, want %d\n%s", code, c.exit, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if c.exit == exitUsage && strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("not one line:\n%s", errOut)
			}
			if strings.Contains(out+errOut, marker[2:]) {
				t.Errorf("output shows the password:\n%s%s", out, errOut)
			}
		})
	}
}
