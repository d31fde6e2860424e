package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// rerequest --config releases a day whose full-day request FAILED (issue
// 39 item 6), and refuses a day that is not held.
func TestRerequestReleasesAFailedDay(t *testing.T) {
	t.Parallel()
	dsn := pgtest.New(t)
	if _, err := store.Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: "root@tcp(127.0.0.1:3306)/unused"}
database: {dsn: %q}
kafka: {brokers: ["127.0.0.1:9092"]}
`, dsn)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(t.Context()) })
	if _, err := db.Exec(t.Context(), `INSERT INTO req_track (kind, operation_day, range_start, range_end, routing_id, seqn, status, rejections, rejection)
		VALUES ('RQFD', '2026-09-09', '09SEP260000', '09SEP262359', 'AODB', 1, 'FAILED', 2, 'MIXED_OPERATION_DAYS: RESP records span several operation days')`); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI("rerequest", "--config", cfg, "--day", "2026-09-09")
	if code != 0 || !strings.Contains(out, "2026-09-09 released") {
		t.Fatalf("rerequest: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var released bool
	if err := db.QueryRow(t.Context(), `SELECT released_at IS NOT NULL FROM req_track`).Scan(&released); err != nil || !released {
		t.Fatalf("released_at set: %v, %v", released, err)
	}
	code, _, errOut = runCLI("rerequest", "--config", cfg, "--day", "2026-09-09")
	if code != exitFailed || !strings.Contains(errOut, "not held") {
		t.Fatalf("rerequest of a day not held: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCLI("rerequest", "--config", cfg, "--day", "9/9"); code == 0 || !strings.Contains(errOut, "YYYY-MM-DD") {
		t.Fatalf("rerequest --day 9/9: exit %d, stderr %q", code, errOut)
	}
}
