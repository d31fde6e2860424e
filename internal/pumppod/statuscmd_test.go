package pumppod_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/cli"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// flightfeedCLI runs the flightfeed command line in this process.
func flightfeedCLI(t *testing.T, args ...string) string {
	t.Helper()
	root := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("flightfeed %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// `flightfeed status`, from the API server alone, shows a feed driven by
// the real pump: its leader, its pump, a DEAD message from the feed's
// Events, and the ledger `flightfeed ledger` reads from the database.
func TestStatusCommandShowsTheRealPumpsFeed(t *testing.T) {
	h := newHarness(t)
	h.startReplicaWith("replica-a", pumppod.StartFeed)
	h.secrets("pek")
	key := h.feedToday("pek")

	mbox, loc, day := h.pumpRequest()
	resp := simulate.Response(simulate.Options{Day: day, Flights: 3, Seed: 1, FirstSeqn: 1, Location: loc})
	insert := func(body string) int64 {
		t.Helper()
		return mailboxtest.Write(t, mbox, mailbox.Inbound{Received: time.Now(), Body: body})
	}
	respID := insert(resp.Body)
	deadID := insert("<MSG><META><SNDR>AODB</SNDR>")
	var ledger store.LedgerDay
	await.Eventually(t, "the RESP to become the day's snapshot", waitLong, func() (bool, string) {
		ledger = h.ledger()[day]
		return ledger.Version == 1 && ledger.LastMessageID == respID, fmt.Sprintf("%+v", ledger)
	})
	h.waitDay(key, ledger)
	h.waitEvent(key, "DeadMessage", fmt.Sprintf("mailbox row %d", deadID))

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubetest.WriteKubeconfig(restCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	feedConfig := filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf("airport: {iata: PEK}\nmailbox: {dsn: %q}\ndatabase: {dsn: %q}\nkafka: {brokers: [%q]}\n", h.mboxDSN, h.pgDSN, h.brokers[0])
	if err := os.WriteFile(feedConfig, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}

	// -o json: the ledger's entries are `flightfeed ledger`'s lines.
	var ledgerLines []map[string]any
	for line := range strings.Lines(flightfeedCLI(t, "ledger", "--config", feedConfig)) {
		var d map[string]any
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		ledgerLines = append(ledgerLines, d)
	}
	if len(ledgerLines) == 0 {
		t.Fatal("flightfeed ledger printed nothing")
	}
	var report struct {
		Feed   string `json:"feed"`
		Leader struct {
			Holder  string `json:"holder"`
			Expired bool   `json:"expired"`
		} `json:"leader"`
		Pump struct {
			LastProcessedID int64 `json:"lastProcessedId"`
		} `json:"pump"`
		Dead []struct {
			Reason, Message string
		} `json:"dead"`
		Ledger []map[string]any `json:"ledger"`
	}
	var jsonOut string
	await.Eventually(t, "the status to report the pump past the DEAD message", waitLong, func() (bool, string) {
		jsonOut = flightfeedCLI(t, "status", "--kubeconfig", kubeconfig, "--feed", key.String(), "-o", "json")
		if err := json.Unmarshal([]byte(jsonOut), &report); err != nil {
			t.Fatalf("status -o json: %v\n%s", err, jsonOut)
		}
		return report.Pump.LastProcessedID == deadID, jsonOut
	})
	for _, d := range report.Ledger {
		delete(d, "committed_at")
	}
	if d := cmp.Diff(ledgerLines, report.Ledger); d != "" {
		t.Errorf("status's ledger differs from flightfeed ledger's (-ledger +status):\n%s", d)
	}
	if report.Feed != key.String() || report.Leader.Holder != "replica-a" || report.Leader.Expired {
		t.Errorf("feed and leader: %s", jsonOut)
	}
	if len(report.Dead) != 1 || report.Dead[0].Reason != "DeadMessage" || !strings.Contains(report.Dead[0].Message, fmt.Sprintf("mailbox row %d:", deadID)) {
		t.Errorf("DEAD messages: %+v", report.Dead)
	}

	// The table prints the same ledger, one row per day.
	text := flightfeedCLI(t, "status", "--kubeconfig", kubeconfig, "--feed", key.String())
	rows := map[string]bool{}
	for line := range strings.Lines(text) {
		rows[strings.Join(strings.Fields(line), " ")] = true
	}
	for _, d := range ledgerLines {
		row := fmt.Sprintf("%s %v %v %v %s", d["day"], d["version"], d["last_message_id"], d["flights"], ledger.LastCommitAt.UTC().Truncate(time.Second).Format(time.RFC3339))
		if !rows[row] {
			t.Errorf("the table lacks the ledger row %q:\n%s", row, text)
		}
	}
	for _, want := range []string{"FlightFeed " + key.String(), "Leader: replica-a, epoch ", "Kafka: " + h.brokers[0] + " → KAFKA_SCHD, KAFKA_MSG; reachable True"} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
}
