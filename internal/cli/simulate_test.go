package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// The demo's flow: the pump asks for today's schedule, simulate answers it
// and writes the day's traffic, the pump drains it.
func TestSimulateThenPump(t *testing.T) {
	mdsn, pdsn := mailboxtest.New(t), pgtest.New(t) // mailbox tables come from --create-mailbox
	brokers := kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")
	cfg := filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms, batchSize: 200}
database: {dsn: %q}
kafka: {brokers: [%q]}
requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 1h, routingId: AODB}
`, mdsn, pdsn, brokers[0])
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("simulate", "--config", cfg, "--create-mailbox", "--flights", "6", "--malformed", "2")
	if code != 0 || !strings.Contains(out, "wrote ") || strings.Contains(out, "answering") {
		t.Fatalf("first simulate: exit %d %s\n%s", code, errOut, out)
	}
	if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
		t.Fatalf("pump: %s", errOut)
	}
	// Now the pump's request is waiting in COUTMSGS: simulate answers it.
	// Without traffic, --day names no message: the summary names the day
	// answered.
	code, out, errOut = runCLI("simulate", "--config", cfg, "--flights", "6", "--traffic=false", "--day", "2000-01-01")
	answered := regexp.MustCompile(`answering request \d+ for (\d{4}-\d\d-\d\d)`).FindStringSubmatch(out)
	if code != 0 || answered == nil || !strings.Contains(out, "wrote 1 messages for "+answered[1]+"\n") {
		t.Fatalf("second simulate: exit %d %s\n%s", code, errOut, out)
	}
	if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
		t.Fatalf("pump: %s", errOut)
	}
	_, ledger, _ := runCLI("ledger", "--config", cfg)
	var day struct {
		Day     string `json:"day"`
		Version int    `json:"version"`
		Flights int    `json:"flights"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(ledger)), &day); err != nil || day.Version != 1 || day.Flights != 6 {
		t.Fatalf("ledger %q: %v", ledger, err)
	}
	_, export, _ := runCLI("export", "--config", cfg, "--day", day.Day)
	if n := strings.Count(export, "\n"); n < 5 {
		t.Fatalf("export of %s has %d flights:\n%s", day.Day, n, export)
	}
	// --drain waited for the outbox: the state topic already equals the
	// export (latest record per FLID, tombstones deleting).
	_, all, _ := runCLI("export", "--config", cfg)
	var lines [][]byte
	for _, l := range strings.Split(strings.TrimSpace(all), "\n") {
		lines = append(lines, []byte(l))
	}
	dispatchtest.AssertConverged(t, brokers, "KAFKA_SCHD", lines)
	records := dispatchtest.Records(t, brokers, "KAFKA_SCHD")
	dispatchtest.AssertVersionsRise(t, records)
	if len(dispatchtest.Records(t, brokers, "KAFKA_MSG")) == 0 {
		t.Fatal("no change notices published")
	}
}
