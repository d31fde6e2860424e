package cli

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// refMessages are reference data as the AODB sends it, from mailbox row
// first on: the whole gate list (B7, B8, B9, each with its name GTNM), then
// the airline CA (UPD, with its name ONAM and an alliance).
func refMessages(first int) []string {
	return []string{
		sisMessage(first, "GLST", "DNLD", "<RECS>3</RECS><GLST><GCOD>B7</GCOD><GTNM>North7</GTNM></GLST>"+
			"<GLST><GCOD>B8</GCOD><GTNM>North8</GTNM></GLST><GLST><GCOD>B9</GCOD></GLST>"),
		sisMessage(first+1, "AIRL", "UPD", "<AIRL><ITOP>CA</ITOP><ICOP>CCA</ICOP><ONAM>AIR CHINA</ONAM><OGRP>STAR ALLIANCE</OGRP></AIRL>"),
	}
}

// writeMessages writes bodies into the feed's mailbox, received a second
// apart.
func writeMessages(t *testing.T, mailboxDSN string, bodies ...string) {
	t.Helper()
	mbox, err := sql.Open("mysql", mailboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	for i, body := range bodies {
		mailboxtest.Write(t, mbox, mailbox.Inbound{Received: time.Date(2026, 9, 9, 10, 0, i, 0, time.UTC), Body: body})
	}
}

// `flightfeed ref --config F` reads the reference data from the database:
// every list, a list's records (paged by --limit and --after, the rest
// announced on standard error), one record as its document; an unknown
// list or a bad command line is a usage error, a key not stored a failure.
func TestRefReadsReferenceDataFromTheDatabase(t *testing.T) {
	mailboxDSN, databaseDSN, broker := mailboxtest.NewMailbox(t), pgtest.New(t), kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")[0]
	cfg := writeFeed(t, mailboxDSN, databaseDSN, broker)
	writeMessages(t, mailboxDSN, refMessages(1)...)
	if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
		t.Fatalf("pump --drain: exit %d: %s", code, errOut)
	}

	// Every list: the catalogue's 23, by name; gates replaced by row 1,
	// airlines changed by row 2, cities never received.
	code, out, errOut := runCLI("ref", "--config", cfg)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 24 || strings.Join(strings.Fields(lines[0]), " ") != "LIST TYPE RECORDS LAST-MESSAGE UPDATED REPLACED" {
		t.Fatalf("ref: exit %d %s\n%s", code, errOut, out)
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	if g := rows["gates"]; len(g) != 7 || g[1] != "GLST" || g[2] != "3" || g[3] != "1" || !strings.HasPrefix(g[6], "1@2") {
		t.Errorf("gates row %q", g)
	}
	if a := rows["airlines"]; len(a) != 7 || a[1] != "AIRL" || a[2] != "1" || a[3] != "2" || a[6] != "-" {
		t.Errorf("airlines row %q", a)
	}
	if c := rows["cities"]; strings.Join(c, " ") != "cities CITY 0 - - -" {
		t.Errorf("cities row %q", c)
	}
	if code, out, _ := runCLI("ref", "--config", cfg, "-o", "wide"); code != 0 || !strings.Contains(out, "ITCD,ICCD") || !strings.Contains(out, "baggage belts") {
		t.Errorf("ref -o wide: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI("ref", "--config", cfg, "-o", "json")
	if code != 0 || strings.Count(out, "\n") != 23 || !strings.Contains(out, `{"type":"GLST","name":"gates","title":"gates","key":["GCOD"],"records":3,"last_message_id":1,`) {
		t.Errorf("ref -o json (JSON lines):\n%s", out)
	}

	// A list's records, by name or TYPE.
	for _, kind := range []string{"gates", "GLST", "glst"} {
		code, out, errOut = runCLI("ref", "--config", cfg, kind)
		if code != 0 || fieldsOf(out) != "KEY NAME MESSAGE UPDATED|B7 North7 1 2|B8 North8 1 2|B9 - 1 2" {
			t.Errorf("ref %s: exit %d %s\n%s", kind, code, errOut, out)
		}
	}
	if code, out, _ := runCLI("ref", "--config", cfg, "airlines", "-o", "wide"); code != 0 || !strings.Contains(out, `{"ICOP":"CCA","ITOP":"CA","OGRP":["STAR ALLIANCE"],"ONAM":"AIR CHINA"}`) ||
		!strings.Contains(out, "AIR CHINA") {
		t.Errorf("ref airlines -o wide: exit %d\n%s", code, out)
	}
	code, out, errOut = runCLI("ref", "--config", cfg, "gates", "--limit", "2")
	if code != 0 || fieldsOf(out) != "KEY NAME MESSAGE UPDATED|B7 North7 1 2|B8 North8 1 2" || !strings.Contains(errOut, "the first 2 gates only: more follow (--after B8)") {
		t.Errorf("ref gates --limit 2: exit %d %s\n%s", code, errOut, out)
	}
	if code, out, errOut := runCLI("ref", "--config", cfg, "gates", "--limit", "3"); code != 0 || strings.Count(out, "\n") != 4 || errOut != "" {
		t.Errorf("ref gates --limit 3 (all of them): exit %d %q\n%s", code, errOut, out)
	}
	if code, out, _ := runCLI("ref", "--config", cfg, "gates", "--after", "B8"); code != 0 || fieldsOf(out) != "KEY NAME MESSAGE UPDATED|B9 - 1 2" {
		t.Errorf("ref gates --after B8: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI("ref", "--config", cfg, "cities"); code != 0 || fieldsOf(out) != "KEY NAME MESSAGE UPDATED" {
		t.Errorf("ref cities (none): exit %d\n%s", code, out)
	}
	code, out, _ = runCLI("ref", "--config", cfg, "gates", "-o", "json")
	var rec struct {
		Type, Name, Key string
		MessageID       int64     `json:"message_id"`
		UpdatedAt       time.Time `json:"updated_at"`
		Record          map[string]any
	}
	first, _, _ := strings.Cut(out, "\n")
	if err := json.Unmarshal([]byte(first), &rec); code != 0 || err != nil || strings.Count(out, "\n") != 3 ||
		rec.Type != "GLST" || rec.Name != "gates" || rec.Key != "B7" || rec.MessageID != 1 || rec.UpdatedAt.IsZero() || rec.Record["GTNM"] != "North7" {
		t.Errorf("ref gates -o json: exit %d %v\n%s", code, err, out)
	}

	// One record: its document by default and with -o json, its row with
	// -o table.
	for _, o := range [][]string{nil, {"-o", "json"}} {
		code, out, errOut = runCLI(append([]string{"ref", "--config", cfg, "AIRL", "CA"}, o...)...)
		rec.Record = nil
		if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil || rec.Key != "CA" || rec.Name != "airlines" || rec.MessageID != 2 ||
			rec.Record["ONAM"] != "AIR CHINA" || fmt.Sprint(rec.Record["OGRP"]) != "[STAR ALLIANCE]" {
			t.Errorf("ref AIRL CA %v: exit %d %s %v\n%s", o, code, errOut, err, out)
		}
	}
	if code, out, _ := runCLI("ref", "--config", cfg, "gates", "B8", "-o", "table"); code != 0 || fieldsOf(out) != "KEY NAME MESSAGE UPDATED|B8 North8 1 2" {
		t.Errorf("ref gates B8 -o table: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCLI("ref", "--config", cfg, "gates", "ZZ"); code != exitFailed || !strings.Contains(errOut, `gates (GLST) record "ZZ" not found`) {
		t.Errorf("ref gates ZZ: exit %d: %s", code, errOut)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, `unknown reference list "nope": one of abnormal-reasons (ABNR), airbridges (ABDG)`},
		{[]string{"gates", "B7", "B8"}, "at most KIND and KEY"},
		{[]string{"--limit", "2"}, "name the list (KIND)"},
		{[]string{"gates", "B7", "--after", "B1"}, "not one record"},
		{[]string{"gates", "--limit", "-1"}, "--limit -1: must be 0 or more"},
		{[]string{"-o", "yaml"}, `-o "yaml"`},
		{[]string{"--feed", "pek"}, "not both"},
	} {
		if code, _, errOut := runCLI(append([]string{"ref", "--config", cfg}, bad.args...)...); code != exitUsage || !strings.Contains(errOut, bad.want) {
			t.Errorf("ref --config F %v: exit %d (%s), want %d with %q", bad.args, code, errOut, exitUsage, bad.want)
		}
	}
}

// fieldsOf is a table's lines, each as its fields joined by one space,
// joined by "|", with the UPDATED column (a time: two fields) cut to its
// date's first character: "KEY NAME MESSAGE UPDATED|B7 North7 1 2".
func fieldsOf(out string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && strings.Contains(f[len(f)-1], ":") {
			f = append(f[:len(f)-2], f[len(f)-2][:1])
		}
		lines = append(lines, strings.Join(f, " "))
	}
	return strings.Join(lines, "|")
}

// kubectl flightfeed ref NAME … reads the same reference data through the
// feed's read API, behind the API server's service proxy, with a token
// whose user may get flightfeeds/flights, and prints what ref --config
// prints; a token without that right is refused with the permission named.
func TestPluginReadsReferenceDataThroughTheServiceProxy(t *testing.T) {
	w := newProxyWorld(t)
	feed, err := config.Load(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	// deadWorld's mailbox holds rows 1 to 4; the running pump pod takes
	// these as rows 5 and 6.
	writeMessages(t, feed.Secrets.MailboxDSN, refMessages(5)...)
	await.Eventually(t, "the pump pod to store the reference data", time.Minute, func() (bool, string) {
		_, out, _ := runCLI("ref", "--config", w.cfg, "airlines")
		return strings.Contains(out, "CA "), out
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
	for _, tc := range []struct {
		name   string
		run    func(...string) (int, string, string)
		args   []string
		config []string
	}{
		{"kubectl flightfeed ref NAME", runPlugin, as("ref", "pek"), []string{"ref"}},
		{"flightfeed ref NAME", runCLI, as("ref", "pek"), []string{"ref"}},
		{"ref NAME KIND", runPlugin, as("ref", "pek", "gates"), []string{"ref", "gates"}},
		{"ref NAME KIND -o wide", runPlugin, as("ref", "pek", "airlines", "-o", "wide"), []string{"ref", "airlines", "-o", "wide"}},
		{"ref NAME KIND --limit", runPlugin, as("ref", "pek", "gates", "--limit", "1"), []string{"ref", "gates", "--limit", "1"}},
		{"ref NAME KIND --after", runPlugin, as("ref", "pek", "GLST", "--after", "B7"), []string{"ref", "GLST", "--after", "B7"}},
		{"ref NAME KIND KEY", runPlugin, as("ref", "pek", "gates", "B8"), []string{"ref", "gates", "B8"}},
		{"flightfeed ref --feed KIND KEY", runCLI, []string{"ref", "--feed", "default/pek", "airlines", "CA", "--kubeconfig", w.kubeconfig, "--service-account", "reader"}, []string{"ref", "airlines", "CA"}},
		{"flightfeed ref NAME KIND -o json", runCLI, as("ref", "pek", "gates", "-o", "json"), []string{"ref", "gates", "-o", "json"}},
	} {
		code, viaProxy, errOut := tc.run(tc.args...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", tc.name, code, errOut)
			continue
		}
		_, fromDB, _ := runCLI(append(tc.config, "--config", w.cfg)...)
		if viaProxy != fromDB || fromDB == "" {
			t.Errorf("%s: through the proxy\n%s\nfrom the database\n%s", tc.name, viaProxy, fromDB)
		}
	}
	// Paged through the API one record at a time, every gate once.
	if code, out, errOut := runPlugin(as("ref", "pek", "gates", "--limit", "1")...); code != 0 || !strings.Contains(errOut, "the first 1 gates only: more follow (--after B7)") || strings.Count(out, "\n") != 2 {
		t.Errorf("ref pek gates --limit 1: exit %d %s\n%s", code, errOut, out)
	}
	code, out, errOut := runPlugin(as("ref", "pek", "gates", "-o", "yaml")...)
	if code != 0 || !strings.Contains(out, "kind: List") || !strings.Contains(out, "GTNM: North8") || strings.Count(out, "key: B") != 3 {
		t.Errorf("ref pek gates -o yaml: exit %d %s\n%s", code, errOut, out)
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Name    string `json:"name"`
			Records int64  `json:"records"`
		} `json:"items"`
	}
	code, out, errOut = runPlugin(as("ref", "pek", "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || list.Kind != "List" || len(list.Items) != 23 {
		t.Errorf("ref pek -o json: exit %d %s %v\n%s", code, errOut, err, out)
	}
	if code, out, _ := runPlugin(as("ref", "pek", "gates", "B8", "-o", "yaml")...); code != 0 || !strings.Contains(out, "record:\n  GCOD: B8\n  GTNM: North8\n") || !strings.Contains(out, "name: gates\n") {
		t.Errorf("ref pek gates B8 -o yaml: exit %d\n%s", code, out)
	}
	if code, _, errOut := runPlugin(as("ref", "pek", "gates", "ZZ")...); code != exitFailed || !strings.Contains(errOut, `gates (GLST) record "ZZ" not found`) {
		t.Errorf("ref pek gates ZZ: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runPlugin(as("ref", "pek", "nope")...); code != exitUsage || !strings.Contains(errOut, `unknown reference list "nope"`) {
		t.Errorf("ref pek nope: exit %d: %s", code, errOut)
	}
	// ops may read the messages, not the flights: nor the reference data.
	if code, _, errOut := runPlugin("ref", "pek", "gates", "-n", "default", "--kubeconfig", w.kubeconfig, "--service-account", "ops"); code != exitFailed ||
		!strings.Contains(errOut, "(403)") || !strings.Contains(errOut, "get on flightfeeds/flights") {
		t.Errorf("ref as ops: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runPlugin("ref", "--config", w.cfg); code != exitUsage || !strings.Contains(errOut, "unknown flag: --config") {
		t.Errorf("kubectl flightfeed ref --config: exit %d: %s", code, errOut)
	}
}
