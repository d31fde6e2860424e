package cli

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

var summaryLine = regexp.MustCompile(`^flightfeed: pump --drain stopped by a signal before the feed was drained: ` +
	`(\d+) unprocessed mailbox rows, (\d+) results not written back to the mailbox, (\d+) undelivered outbox events$`)

// A drain stopped by SIGTERM is not a finished drain: the process exits
// non-zero and its last line says what was left. The broker refuses every
// connection, so the outbox cannot drain however fast the pump is.
func TestPumpDrainStoppedBySignalSaysWhatIsLeft(t *testing.T) {
	mdsn, pdsn := mailboxtest.NewMailbox(t), pgtest.New(t)
	cfg := filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms, batchSize: 20}
database: {dsn: %q}
kafka: {brokers: ["127.0.0.1:1"]}
requests: {disabled: true}
`, mdsn, pdsn)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mbox, err := sql.Open("mysql", mdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	const rows = 400
	var bodies []string
	for i := range rows {
		bodies = append(bodies, fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>GTDT</STYP></META>`+
			`<FLOP><FLID>%d</FLID><GTDT GTNO="1"><GATE>A1</GATE><GTYP>D</GTYP></GTDT></FLOP></MSG>`, i+1, 1000+i))
	}
	mailboxtest.Write(t, mbox, mailboxtest.Bodies(bodies...)...)

	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, os.Args[0], "pump", "--config", cfg, "--drain")
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Signal once the pump has committed something, so there are events
	// that cannot be delivered.
	for {
		var done int
		if err := mbox.QueryRowContext(ctx, `SELECT count(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the pump processed nothing:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitFailed {
		t.Fatalf("pump --drain after SIGTERM: %v, want exit %d\n%s", err, exitFailed, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	m := summaryLine.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("last line is not the summary:\n%s", stderr.String())
	}

	// The summary's figures are the feed's: nothing runs any more.
	var unprocessed int64
	if err := mbox.QueryRowContext(ctx, `SELECT count(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NULL`).Scan(&unprocessed); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var backfills, pending int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT coalesce(sum(cardinality(message_ids)), 0) FROM backfill_todo), (SELECT count(*) FROM msg_event_record WHERE id > (SELECT delivered_id FROM msg_event_cursor) AND (id, kind) NOT IN (SELECT event_id, kind FROM msg_event_parked))`).Scan(&backfills, &pending); err != nil {
		t.Fatal(err)
	}
	want := []int64{unprocessed, backfills, pending}
	for i, w := range want {
		if got, _ := strconv.ParseInt(m[i+1], 10, 64); got != w {
			t.Errorf("summary %q: figure %d is %d, the feed has %d", m[0], i+1, got, w)
		}
	}
	if pending == 0 {
		t.Errorf("no undelivered event although the broker refuses connections")
	}
}
