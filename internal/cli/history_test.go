package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/readapi"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// historyMessages touch flight 12345678 from mailbox row first on: a
// snapshot creates it with an estimate, a FLOP sets its gate B7, another
// clears the estimate.
func historyMessages(first int) []string {
	return []string{
		sisMessage(first, "SCHD", "DNLD", "<SCHD><RECS>1</RECS><FLTR><FLID>12345678</FLID><FLNO>CA1</FLNO><SODT>09SEP260800</SODT><ESTT>09SEP260900</ESTT></FLTR></SCHD>"),
		sisMessage(first+1, "FLOP", "GTDT", `<FLOP><FLID>12345678</FLID><GTDT GTNO="1"><GATE>B7</GATE></GTDT></FLOP>`),
		sisMessage(first+2, "FLOP", "ESTT", "<FLOP><FLID>12345678</FLID><ESTT></ESTT></FLOP>"),
	}
}

// `flightfeed history --config F FLID` lists what each message changed,
// oldest first, one line a change and its fields indented; -o wide adds
// the kind, -o json prints the read API's document; an unknown flight
// fails, a bad command line is a usage error.
func TestHistoryReadsTheDatabase(t *testing.T) {
	mailboxDSN, databaseDSN, broker := mailboxtest.NewMailbox(t), pgtest.New(t), kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")[0]
	cfg := writeFeed(t, mailboxDSN, databaseDSN, broker)
	writeMessages(t, mailboxDSN, historyMessages(1)...)
	if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
		t.Fatalf("pump --drain: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI("history", "--config", cfg, "12345678")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != 0 || len(lines) != 9 {
		t.Fatalf("history: exit %d %s\n%s", code, errOut, out)
	}
	fields := func(l string) string { return strings.Join(strings.Fields(l), " ") }
	if fields(lines[0]) != "MSG_ID STYP RECEIVED COMMITTED RESULT VERSION" {
		t.Fatalf("header %q", lines[0])
	}
	row := func(l string) []string { return strings.Fields(l) }
	r1, r2, r3 := row(lines[1]), row(lines[5]), row(lines[7])
	if len(r1) != 8 || r1[0] != "1" || r1[1] != "DNLD" || r1[6] != "SUCCEEDED" || !strings.HasPrefix(r1[7], "-→") {
		t.Errorf("first change %q", r1)
	}
	if got := fields(lines[2]) + "|" + fields(lines[3]) + "|" + fields(lines[4]); got != "FLNO Set - → CA1|SODT Set - → 09SEP260800|ESTT Set - → 09SEP260900" {
		t.Errorf("the snapshot's fields: %s", got)
	}
	v1 := strings.TrimPrefix(r1[7], "-→")
	if len(r2) != 8 || r2[0] != "2" || r2[1] != "GTDT" || !strings.HasPrefix(r2[7], v1+"→") || fields(lines[6]) != `GTDT Set - → [{"GATE":"B7","GTNO":"1"}]` {
		t.Errorf("the gate's change %q %q", r2, lines[6])
	}
	if len(r3) != 8 || r3[0] != "3" || r3[1] != "ESTT" || fields(lines[8]) != "ESTT Clear 09SEP260900 → -" {
		t.Errorf("the estimate's change %q %q", r3, lines[8])
	}
	if !strings.HasPrefix(r1[2], "2026-09-09") || !strings.Contains(r1[3], ":") {
		t.Errorf("times %q", r1)
	}

	if code, out, _ := runCLI("history", "--config", cfg, "12345678", "-o", "wide", "--limit", "1"); code != 0 ||
		!strings.Contains(strings.Split(out, "\n")[0], "TYPE") || !strings.Contains(out, "UPSERT") || strings.Count(out, "\n") != 5 {
		t.Errorf("history -o wide --limit 1: exit %d\n%s", code, out)
	}
	var page readapi.HistoryPage
	code, out, _ = runCLI("history", "--config", cfg, "12345678", "-o", "json", "--since", time.Now().Add(-time.Hour).Format(time.RFC3339))
	if err := json.Unmarshal([]byte(out), &page); code != 0 || err != nil || page.FLID != "12345678" || len(page.Items) != 3 ||
		page.Items[2].Changes[0].Op != "Clear" || page.Items[1].FromVersion != page.Items[0].Version {
		t.Errorf("history -o json: exit %d %v\n%s", code, err, out)
	}
	if code, out, _ := runCLI("history", "--config", cfg, "12345678", "--day", "2026-09-10"); code != 0 || strings.Count(out, "\n") != 1 {
		t.Errorf("history --day of another day: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCLI("history", "--config", cfg, "999"); code != exitFailed || !strings.Contains(errOut, "flight 999 not found") {
		t.Errorf("history of an unknown flight: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI("history", "--config", cfg, "12345678", "--since", "yesterday"); code != exitUsage || !strings.Contains(errOut, "--since") {
		t.Errorf("history --since yesterday: exit %d: %s", code, errOut)
	}
}

// kubectl flightfeed history NAME FLID reads the same history through the
// feed's read API, with a token whose user may get flightfeeds/flights, and
// prints what history --config prints; a token without that right is
// refused with the permission named.
func TestPluginReadsHistoryThroughTheServiceProxy(t *testing.T) {
	w := newProxyWorld(t)
	feed, err := config.Load(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	// deadWorld's mailbox holds rows 1 to 4; the running pump pod takes
	// these as rows 5 to 7.
	writeMessages(t, feed.Secrets.MailboxDSN, historyMessages(5)...)
	await.Eventually(t, "the pump pod to commit the three changes", time.Minute, func() (bool, string) {
		_, out, _ := runCLI("history", "--config", w.cfg, "12345678")
		return strings.Contains(out, "ESTT Clear"), out
	})
	serviceAccount(t, w.admin, "reader", []rbacv1.PolicyRule{
		{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds/flights"}, Verbs: []string{"get"}},
	})
	bind(t, w.admin, "reader-token", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ops-person"}, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{"reader"}, Verbs: []string{"create"}},
	})
	as := func(args ...string) []string {
		return append(args, "-n", "default", "--kubeconfig", w.kubeconfig, "--service-account", "reader")
	}
	for _, tc := range [][]string{{}, {"-o", "wide"}, {"-o", "yaml"}, {"--limit", "2"}} {
		code, viaProxy, errOut := runPlugin(as(append([]string{"history", "pek", "12345678"}, tc...)...)...)
		if code != 0 {
			t.Errorf("history %v: exit %d: %s", tc, code, errOut)
			continue
		}
		_, fromDB, _ := runCLI(append([]string{"history", "--config", w.cfg, "12345678"}, tc...)...)
		if viaProxy != fromDB || fromDB == "" {
			t.Errorf("history %v: through the proxy\n%s\nfrom the database\n%s", tc, viaProxy, fromDB)
		}
	}
	if code, _, errOut := runPlugin(as("history", "pek", "999")...); code != exitFailed || !strings.Contains(errOut, "flight 999 not found") {
		t.Errorf("history pek 999: exit %d: %s", code, errOut)
	}
	// ops may read the messages, not the flights: nor their history.
	if code, _, errOut := runPlugin("history", "pek", "12345678", "-n", "default", "--kubeconfig", w.kubeconfig, "--service-account", "ops"); code != exitFailed ||
		!strings.Contains(errOut, "(403)") || !strings.Contains(errOut, "get on flightfeeds/flights") {
		t.Errorf("history as ops: exit %d: %s", code, errOut)
	}
}
