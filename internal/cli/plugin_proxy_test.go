package cli

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// get flight and export read the feed's flights through its read API,
// behind the API server's service proxy, as dead does: what they print is
// what export --config prints from the database, paged with the list's
// cursor. The plugin's dead NAME prints the flightfeed binary's table.
func TestPluginReadsFlightsThroughTheServiceProxy(t *testing.T) {
	w := newProxyWorld(t)
	ctx := t.Context()

	// Five more flights, by a full-day snapshot the running pump pod takes.
	feed, err := config.Load(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	mbox, err := sql.Open("mysql", feed.Secrets.MailboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	var recs strings.Builder
	for flid := 101; flid <= 105; flid++ {
		fmt.Fprintf(&recs, `<FLTR><FLID>%d</FLID><SODT>09SEP260800</SODT><FLNO>CA%d</FLNO></FLTR>`, flid, flid)
	}
	mailboxtest.Write(t, mbox, mailbox.Inbound{Received: time.Date(2026, 9, 9, 11, 0, 0, 0, time.UTC),
		Body: `<MSG><META><SNDR>AODB</SNDR><SEQN>9</SEQN><DDTM>20260909110000</DDTM><TYPE>SCHD</TYPE><STYP>DNLD</STYP></META>` +
			`<SCHD><RECS>5</RECS>` + recs.String() + `</SCHD></MSG>`})
	var direct string
	await.Eventually(t, "the pump pod to store the five flights", time.Minute, func() (bool, string) {
		_, direct, _ = runCLI("export", "--config", w.cfg)
		return strings.Count(direct, "\n") >= 6, direct
	})

	// A reader: the person may make its tokens; it may get flights only.
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
		{"flightfeed export NAME", runCLI, as("export", "pek"), []string{"export"}},
		{"flightfeed export --feed", runCLI, []string{"export", "--feed", "default/pek", "--kubeconfig", w.kubeconfig, "--service-account", "reader"}, []string{"export"}},
		{"kubectl flightfeed export NAME", runPlugin, as("export", "pek"), []string{"export"}},
		{"export --day", runPlugin, as("export", "pek", "--day", "2026-09-09"), []string{"export", "--day", "2026-09-09"}},
		{"export --day with no flights", runPlugin, as("export", "pek", "--day", "2026-09-01"), []string{"export", "--day", "2026-09-01"}},
		{"export --flid", runPlugin, as("export", "pek", "--flid", "103"), []string{"export", "--flid", "103"}},
		{"export --flid absent", runPlugin, as("export", "pek", "--flid", "999"), []string{"export", "--flid", "999"}},
		{"get flight", runPlugin, as("get", "flight", "pek", "104"), []string{"export", "--flid", "104"}},
		{"flightfeed get flight", runCLI, as("get", "flight", "pek", "104"), []string{"export", "--flid", "104"}},
	} {
		code, viaProxy, errOut := tc.run(tc.args...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", tc.name, code, errOut)
			continue
		}
		_, fromDB, _ := runCLI(append(tc.config, "--config", w.cfg)...)
		if viaProxy != fromDB {
			t.Errorf("%s: through the proxy\n%s\nfrom the database\n%s", tc.name, viaProxy, fromDB)
		}
	}
	if code, out, errOut := runPlugin(as("get", "flight", "pek", "104", "-o", "yaml")...); code != 0 || !strings.Contains(out, "FLNO: CA104\n") || !strings.Contains(out, "FLID: \"104\"\n") {
		t.Errorf("get flight -o yaml: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runPlugin(as("get", "flight", "pek", "999")...); code != exitFailed || !strings.Contains(errOut, "read API of default/pek (404): flight 999 not found") {
		t.Errorf("get flight 999: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runPlugin(as("get", "flight", "pek", "12AB")...); code != exitUsage || !strings.Contains(errOut, `FLID "12AB"`) {
		t.Errorf("get flight 12AB: exit %d: %s", code, errOut)
	}

	// Paging: one flight a page still lists every flight once, in order.
	personCfg, err := clientcmd.BuildConfigFromFlags("", w.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	api, err := dialFeedAPI(ctx, personCfg, types.NamespacedName{Namespace: "default", Name: "pek"}, "", "reader")
	if err != nil {
		t.Fatal(err)
	}
	var paged strings.Builder
	if err := api.EachFlight(ctx, "", 1, func(doc json.RawMessage) error {
		paged.Write(doc)
		paged.WriteByte('\n')
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if paged.String() != direct {
		t.Errorf("one flight a page:\n%s\nexport --config:\n%s", paged.String(), direct)
	}

	// The plugin's dead NAME prints the flightfeed binary's table; its -o
	// json a kubectl List of the same messages.
	ops := func(args ...string) []string {
		return append(args, "-n", "default", "--kubeconfig", w.kubeconfig, "--service-account", "ops")
	}
	_, table, _ := runCLI("dead", "--config", w.cfg)
	if code, out, errOut := runPlugin(ops("dead", "pek")...); code != 0 || out != table {
		t.Errorf("kubectl flightfeed dead pek: exit %d %s\n%s\nwant\n%s", code, errOut, out, table)
	}
	code, out, errOut := runPlugin(ops("dead", "pek", "-o", "json")...)
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			ID     int64  `json:"id"`
			Reason string `json:"reason"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || list.Kind != "List" || len(list.Items) != 3 || list.Items[0].Reason != "BAD_FLID" {
		t.Errorf("kubectl flightfeed dead pek -o json: exit %d %s %v\n%s", code, errOut, err, out)
	}
	if code, out, _ := runPlugin(ops("dead", "pek", "-o", "wide")...); code != 0 || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "UPDATED") {
		t.Errorf("kubectl flightfeed dead pek -o wide: exit %d\n%s", code, out)
	}
	if code, out, _ := runPlugin(ops("parked", "pek", "-o", "yaml")...); code != 0 || !strings.Contains(out, "kind: List") {
		t.Errorf("kubectl flightfeed parked pek -o yaml: exit %d\n%s", code, out)
	}
	// The plugin has no --config and needs NAME.
	if code, _, errOut := runPlugin("dead", "--config", w.cfg); code != exitUsage || !strings.Contains(errOut, "unknown flag: --config") {
		t.Errorf("kubectl flightfeed dead --config: exit %d: %s", code, errOut)
	}
	if code, _, _ := runPlugin(ops("dead")...); code == 0 {
		t.Error("kubectl flightfeed dead without NAME succeeded")
	}
}

// days NAME lists the feed's FlightFeedDays (labelled with the feed and
// controlled by it), days ascending, as a table or a List; completion
// offers the namespace's FlightFeed names.
func TestDaysListsTheFeedsFlightFeedDays(t *testing.T) {
	restCfg, _ := kubetest.Start(t)
	c := kubetest.Client(t, restCfg)
	ctx := t.Context()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubetest.WriteKubeconfig(restCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*v1alpha1.FlightFeed{}
	for _, name := range []string{"pek", "pkx", "can"} {
		ff := &v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: v1alpha1.FlightFeedSpec{
			Airport:  v1alpha1.AirportSpec{IATA: "PEK", TimeZone: "Asia/Shanghai"},
			Mailbox:  v1alpha1.MailboxSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "m", Key: "dsn"}},
			Database: v1alpha1.DatabaseSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "d", Key: "dsn"}},
			Kafka:    v1alpha1.KafkaSpec{Brokers: []string{"kafka:9092"}},
		}}
		if err := c.Create(ctx, ff); err != nil {
			t.Fatal(err)
		}
		feeds[name] = ff
	}
	day := func(name, feed string, owner *v1alpha1.FlightFeed, d string, version int64) {
		obj := &v1alpha1.FlightFeedDay{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{v1alpha1.LabelFeed: feed}},
			Spec: v1alpha1.FlightFeedDaySpec{FeedName: feed, Day: d}}
		if owner != nil {
			obj.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FlightFeed", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		obj.Status = v1alpha1.FlightFeedDayStatus{Version: version, Flights: 10 * version, LastMessageID: 100 + version}
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	day("pek-2026-09-10", "pek", feeds["pek"], "2026-09-10", 2)
	verified := &v1alpha1.FlightFeedDay{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "pek-2026-09-10"}, verified); err != nil {
		t.Fatal(err)
	}
	verified.Status.Verification = &v1alpha1.DayVerification{Outcome: "DIFFERS", Flights: 20, Differing: 1, FinishedAt: metav1.NewTime(time.Now().Add(-3 * time.Hour))}
	if err := c.Status().Update(ctx, verified); err != nil {
		t.Fatal(err)
	}
	day("pek-2026-09-09", "pek", feeds["pek"], "2026-09-09", 1)
	day("pkx-2026-09-09", "pkx", feeds["pkx"], "2026-09-09", 7)
	day("stray-2026-09-08", "pek", nil, "2026-09-08", 9) // labelled, not controlled by pek

	code, out, errOut := runPlugin("days", "pek", "-n", "default", "--kubeconfig", kubeconfig)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "DAY VERSION FLIGHTS LAST-MESSAGE COMMITTED AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "2026-09-09 1 10 101 - ") ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[2]), " "), "2026-09-10 2 20 102 - ") {
		t.Fatalf("days pek: exit %d %s\n%s", code, errOut, out)
	}
	code, out, _ = runPlugin("days", "pek", "-n", "default", "--kubeconfig", kubeconfig, "-o", "wide")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "DAY VERSION FLIGHTS LAST-MESSAGE COMMITTED AGE VERIFIED VERIFIED-AT NAME" ||
		!strings.HasSuffix(strings.Join(strings.Fields(lines[1]), " "), " - - pek-2026-09-09") ||
		!strings.HasSuffix(strings.Join(strings.Fields(lines[2]), " "), " DIFFERS 3h pek-2026-09-10") {
		t.Errorf("days pek -o wide: exit %d\n%s", code, out)
	}
	code, out, _ = runPlugin("days", "default/pek", "--kubeconfig", kubeconfig, "-o", "json")
	var list struct {
		Kind  string                   `json:"kind"`
		Items []v1alpha1.FlightFeedDay `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || list.Kind != "List" || len(list.Items) != 2 ||
		list.Items[0].Kind != "FlightFeedDay" || list.Items[0].Spec.Day != "2026-09-09" || list.Items[1].Status.Version != 2 {
		t.Errorf("days -o json: exit %d %v\n%s", code, err, out)
	}
	if code, out, _ := runCLI("days", "pek", "-n", "default", "--kubeconfig", kubeconfig, "-o", "json"); code != 0 || strings.Count(out, "\n") != 2 {
		t.Errorf("flightfeed days -o json (JSON lines): exit %d\n%s", code, out)
	}
	if code, _, errOut := runPlugin("days", "nope", "-n", "default", "--kubeconfig", kubeconfig); code != exitUsage || !strings.Contains(errOut, "FlightFeed default/nope not found") {
		t.Errorf("days nope: exit %d: %s", code, errOut)
	}

	// Shell completion of NAME: the FlightFeeds of the namespace.
	code, out, errOut = runPlugin("__complete", "days", "-n", "default", "--kubeconfig", kubeconfig, "p")
	if code != 0 || !strings.HasPrefix(out, "pek\npkx\n:4\n") {
		t.Errorf("__complete days p: exit %d %s\n%q", code, errOut, out)
	}
	if code, out, _ := runPlugin("__complete", "get", "flight", "-n", "default", "--kubeconfig", kubeconfig, ""); code != 0 || !strings.HasPrefix(out, "can\npek\npkx\n:4\n") {
		t.Errorf("__complete get flight: exit %d\n%q", code, out)
	}
	if code, out, _ := runCLI("__complete", "status", "-n", "other", "--kubeconfig", kubeconfig, ""); code != 0 || !strings.HasPrefix(out, ":4\n") {
		t.Errorf("__complete status -n other: exit %d\n%q", code, out)
	}
}
