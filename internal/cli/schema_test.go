package cli

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// An older pump (a rolling upgrade's old replica, a rollback) on a database
// a newer release already migrated refuses to run: it says so, exits 1 and
// reads nothing from the mailbox. Without autoMigrate a database older than
// the binary is refused the same way, and not migrated.
func TestPumpRefusesASchemaNotItsOwn(t *testing.T) {
	ctx := context.Background()
	broker := kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")[0]
	msg := `<MSG><META><SNDR>AODB</SNDR><SEQN>42</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>GTDT</STYP></META>` +
		`<FLOP><FLID>121112312</FLID><GTDT GTNO="1"><GATE>A1</GATE><GTYP>D</GTYP></GTDT></FLOP></MSG>`
	mailboxUntouched := func(t *testing.T, mdsn string) {
		t.Helper()
		mbox, err := sql.Open("mysql", mdsn)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = mbox.Close() }()
		var processed int
		if err := mbox.QueryRowContext(ctx, `SELECT count(*) FROM CMINMSGS WHERE CMINMSGS_PROC_RESULT IS NOT NULL OR CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&processed); err != nil {
			t.Fatal(err)
		}
		if processed != 0 {
			t.Fatalf("%d mailbox row(s) processed by a pump that refused the schema", processed)
		}
	}
	newMailbox := func(t *testing.T) string {
		t.Helper()
		mdsn := mailboxtest.NewMailbox(t)
		mbox, err := sql.Open("mysql", mdsn)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = mbox.Close() }()
		mailboxtest.Write(t, mbox, mailboxtest.Bodies(msg)...)
		return mdsn
	}

	t.Run("newer", func(t *testing.T) {
		mdsn, pdsn := newMailbox(t), pgtest.New(t)
		if _, err := store.Migrate(ctx, pdsn); err != nil {
			t.Fatal(err)
		}
		_, known, err := store.SchemaVersion(ctx, pdsn)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, pdsn)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close(ctx) }()
		// A release one migration ahead applied its migration.
		if _, err := conn.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, known+1); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCLI("pump", "--config", writeFeed(t, mdsn, pdsn, broker), "--drain")
		if code != exitFailed || !strings.Contains(errOut, "database schema is newer than this binary knows") ||
			!strings.Contains(errOut, "refusing to run the pump on this database schema") {
			t.Fatalf("pump on a newer schema: exit %d\n%s", code, errOut)
		}
		mailboxUntouched(t, mdsn)
		var fenced int64
		if err := conn.QueryRow(ctx, `SELECT epoch FROM pipeline_lock`).Scan(&fenced); err != nil || fenced != 0 {
			t.Fatalf("the refusing pump took fencing epoch %d (%v)", fenced, err)
		}
	})
	t.Run("older without autoMigrate", func(t *testing.T) {
		mdsn, pdsn := newMailbox(t), pgtest.New(t)
		cfg := writeFeed(t, mdsn, pdsn, broker)
		doc, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		off := strings.Replace(string(doc), "database: {dsn: ", "database: {autoMigrate: false, dsn: ", 1)
		if err := os.WriteFile(cfg, []byte(off), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCLI("pump", "--config", cfg, "--drain")
		if code != exitFailed || !strings.Contains(errOut, "database schema is older than this binary needs") ||
			!strings.Contains(errOut, "flightfeed migrate") {
			t.Fatalf("pump on an empty database with autoMigrate false: exit %d\n%s", code, errOut)
		}
		mailboxUntouched(t, mdsn)
		if cur, _, err := store.SchemaVersion(ctx, pdsn); err != nil || cur != 0 {
			t.Fatalf("schema after the refusal: %d, %v", cur, err)
		}
		// `flightfeed migrate` is the way; then the same pump runs.
		if code, out, errOut := runCLI("migrate", "--config", cfg); code != 0 || !strings.Contains(out, "schema at version") {
			t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
		}
		if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
			t.Fatalf("pump after migrate: exit %d\n%s", code, errOut)
		}
	})
}
