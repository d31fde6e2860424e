//go:build reliability

package security_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/faultproxy"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/hostile"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// The API server itself refuses every hostile value in every naming
// setting of a FlightFeed (the CRD's patterns and lengths), so a namespace
// editor cannot even store one for the operator to trip over; the same
// object with ordinary values is accepted, so the refusals are the
// values' doing.
func TestAPIServerRefusesHostileIdentifiers(t *testing.T) {
	cfg, _ := kubetest.Start(t)
	c := kubetest.Client(t, cfg)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hostile-" + utilrand.String(5)}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	feed := feedtest.Feed{MailboxDSN: "x", DatabaseDSN: "x", Brokers: []string{"kafka:9092"}}
	base := func(t *testing.T, name string) *unstructured.Unstructured {
		t.Helper()
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(feed.Manifest(name, ns.Name)), &obj); err != nil {
			t.Fatal(err)
		}
		spec := obj["spec"].(map[string]any)
		// The TLS sections exist only when set; give them a Secret so
		// serverName is the only thing that can be wrong.
		spec["mailbox"].(map[string]any)["tls"] = map[string]any{"secretRef": map[string]any{"name": "tls"}}
		spec["database"].(map[string]any)["tls"] = map[string]any{"secretRef": map[string]any{"name": "tls"}}
		spec["kafka"].(map[string]any)["tls"] = map[string]any{"secretRef": map[string]any{"name": "tls"}}
		return &unstructured.Unstructured{Object: obj}
	}
	set := func(u *unstructured.Unstructured, path []string, v string) {
		fields := append([]string{"spec"}, path...)
		if path[len(path)-1] == "brokers" {
			if err := unstructured.SetNestedStringSlice(u.Object, []string{v + ":9092"}, fields...); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := unstructured.SetNestedField(u.Object, v, fields...); err != nil {
			t.Fatal(err)
		}
	}

	ok := base(t, "ordinary")
	if err := c.Create(ctx, ok); err != nil {
		t.Fatalf("the ordinary feed is refused, so no refusal below would mean anything: %v", err)
	}
	var refused int
	for _, path := range hostile.NamingFields {
		name := "spec." + strings.Join(path, ".")
		for i, v := range hostile.Values {
			u := base(t, fmt.Sprintf("h-%s-%d", strings.ToLower(path[len(path)-1]), i))
			set(u, path, v)
			err := c.Create(ctx, u)
			if err == nil {
				t.Errorf("%s = hostile value %d %q: stored", name, i, v)
				continue
			}
			if !apierrors.IsInvalid(err) {
				t.Errorf("%s = %q: %v, want Invalid", name, v, err)
				continue
			}
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%s = %q: the refusal does not name the field: %v", name, v, err)
			}
			refused++
		}
	}
	t.Logf("%d naming settings x %d hostile values: %d refused by the API server", len(hostile.NamingFields), len(hostile.Values), refused)
}

// credentialMarker is in every password of the feed below.
const credentialMarker = "Rk4Secret"

// A pump whose every credential carries a marker is driven through
// dependency faults — its write transactions and mailbox requests cut
// through fault proxies, repeatedly, while it drains a simulated day — at
// the highest log verbosity; then every reading command runs on the same
// config. The marker is in none of their outputs.
func TestNoCredentialInAnyOutputUnderFaults(t *testing.T) {
	ctx := t.Context()
	bin := proctest.Binary(t)
	mdsn := mailboxtest.NewMailbox(t)
	pdsn := pgtest.New(t)
	brokers := kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")

	// A mailbox user whose password holds the marker.
	mcfg, err := mysql.ParseDSN(mailboxtest.WithUser(t, mdsn, "ffrel_", credentialMarker+"-mbx"))
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL here trusts loopback: the password is sent and ignored.
	pgDSN := strings.Replace(pdsn, "postgres://postgres@", "postgres://postgres:"+credentialMarker+"-pg@", 1)
	if pgDSN == pdsn {
		t.Fatalf("cannot put a password into %s", pdsn)
	}
	// The pump reaches both databases through proxies that cut its
	// connections once armed (below).
	pgURL, err := url.Parse(pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	pgProxy, err := faultproxy.Start(pgURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pgProxy.Close)
	pgURL.Host = pgProxy.Addr()
	pgDSN = pgURL.String()
	mboxProxy, err := faultproxy.Start(mcfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mboxProxy.Close)
	mcfg.Addr = mboxProxy.Addr()
	feed := feedtest.Feed{MailboxDSN: mcfg.FormatDSN(), DatabaseDSN: pgDSN, Brokers: brokers,
		PollInterval: "20ms", BatchSize: 8, Pump: "backoffInitial: 50ms, backoffMax: 1s"}
	config := feed.WriteConfig(t, "feed")

	var outputs []string
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("flightfeed %s: %v\n%s", strings.Join(args, " "), err, proctest.Tail(string(out), 20))
		}
		outputs = append(outputs, "flightfeed "+strings.Join(args, " ")+":\n"+string(out))
		return string(out)
	}
	run("simulate", "--config", config, "--create-mailbox", "--answer-requests=false", "--flights", "300", "--malformed", "5")

	// The pump at the highest verbosity, its output kept whole.
	var pumpOut proctest.Output
	pump := exec.CommandContext(ctx, bin, "pump", "--config", config, "--drain", "--zap-log-level=10")
	pump.Stdout, pump.Stderr = &pumpOut, &pumpOut
	if err := pump.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pump.Wait() }()

	// Faults start once the pump is past its start (migrations, first
	// batch): a pump that cannot start exits 1 and is restarted by its
	// supervisor, which is not the case under test. From then on every
	// third write transaction loses its connection at its first statement,
	// and every fifteenth mailbox request its connection, six times each:
	// the faults follow the pump's own progress, however fast it runs.
	mbox, err := sql.Open("mysql", mdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	// Polled often: the faults must find most of the drain still to run
	// (on a quiet machine the pump drains this backlog in well under a
	// second, and a 100 ms poll found it nearly done: no mailbox request
	// was left to cut).
	await.EventuallyEvery(t, "the pump to process its first rows", 2*time.Minute, 2*time.Millisecond, func() (bool, string) {
		var n int
		err := mbox.QueryRowContext(ctx, `SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&n)
		return err == nil && n > 0, fmt.Sprintf("%d rows processed (%v)", n, err)
	})
	const cutsEach = 6
	var mu sync.Mutex
	begun := map[int64]bool{}
	var transactions, pgCuts, chunks, mboxCuts int
	pgProxy.SetInspector(func(c faultproxy.Chunk) faultproxy.Verdict {
		mu.Lock()
		defer mu.Unlock()
		if len(c.Data) > 5 && c.Data[0] == 'Q' && strings.HasPrefix(strings.ToLower(string(c.Data[5:])), "begin") {
			begun[c.Conn] = true
			return faultproxy.Forward
		}
		if begun[c.Conn] {
			delete(begun, c.Conn)
			transactions++
			if transactions%3 == 0 && pgCuts < cutsEach {
				pgCuts++
				return faultproxy.Cut
			}
		}
		return faultproxy.Forward
	})
	mboxProxy.SetInspector(func(faultproxy.Chunk) faultproxy.Verdict {
		mu.Lock()
		defer mu.Unlock()
		chunks++
		if chunks%15 == 0 && mboxCuts < cutsEach {
			mboxCuts++
			return faultproxy.Cut
		}
		return faultproxy.Forward
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pump: %v\n%s", err, proctest.Tail(pumpOut.String(), 30))
		}
	case <-time.After(4 * time.Minute):
		t.Fatalf("the pump did not drain\n%s", proctest.Tail(pumpOut.String(), 30))
	}
	pgProxy.SetInspector(nil)
	mboxProxy.SetInspector(nil)
	mu.Lock()
	faults := pgCuts + mboxCuts
	mu.Unlock()
	outputs = append(outputs, "flightfeed pump --drain --zap-log-level=10:\n"+pumpOut.String())
	// Both kinds of connection must have been cut: an error path of the
	// one never cut is one the search below never saw.
	t.Logf("faults: %d of %d write transactions cut, %d of %d mailbox chunks", pgCuts, transactions, mboxCuts, chunks)
	if pgCuts == 0 || mboxCuts == 0 {
		t.Fatalf("%d write transactions and %d mailbox requests cut: both kinds must be, or the drain proves too little", pgCuts, mboxCuts)
	}

	for _, args := range [][]string{
		{"dead", "--config", config}, {"dead", "--config", config, "-o", "json"},
		{"ledger", "--config", config}, {"export", "--config", config}, {"parked", "--config", config},
	} {
		run(args...)
	}
	// What the pump wrote where others read it: the mailbox's notes, the
	// processing rows (their notes and errors) and both topics.
	outputs = append(outputs, "the mailbox rows' results and notes:\n"+mailboxtest.Results(t, mbox))
	pg, err := pgx.Connect(ctx, pdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Close(context.WithoutCancel(ctx)) }()
	var procState string
	if err := pg.QueryRow(ctx, `SELECT coalesce(string_agg(row_to_json(p)::text, E'\n' ORDER BY message_id), '') FROM proc_state p`).Scan(&procState); err != nil {
		t.Fatal(err)
	}
	if procState == "" {
		t.Fatal("no processing row: the search of proc_state proves nothing")
	}
	outputs = append(outputs, "proc_state:\n"+procState)
	for _, topic := range []string{"KAFKA_SCHD", "KAFKA_MSG"} {
		records := dispatchtest.Records(t, brokers, topic)
		if len(records) == 0 {
			t.Fatalf("%s is empty: its search proves nothing", topic)
		}
		var b strings.Builder
		for _, r := range records {
			fmt.Fprintf(&b, "%s %v %s\n", r.Key, r.Headers, r.Value)
		}
		outputs = append(outputs, "topic "+topic+":\n"+b.String())
	}

	all := strings.Join(outputs, "\n")
	// The faults must have reached the log (an error path is where a DSN
	// would leak), or the grep below proves nothing.
	if !strings.Contains(all, "terminating connection") && !strings.Contains(all, "bad connection") &&
		!strings.Contains(all, "invalid connection") && !strings.Contains(all, "connection reset") {
		t.Fatalf("no fault shows in the outputs: the grep below would prove nothing\n%s", proctest.Tail(pumpOut.String(), 30))
	}
	for _, o := range outputs {
		if i := strings.Index(o, credentialMarker); i >= 0 {
			line := o[strings.LastIndex(o[:i], "\n")+1:]
			if j := strings.Index(line, "\n"); j >= 0 {
				line = line[:j]
			}
			t.Errorf("a credential shows in %s\n%s", strings.SplitN(o, "\n", 2)[0], line)
		}
	}
	t.Logf("%d faults injected (%d write transactions and %d mailbox requests cut); %d bytes of output, mailbox notes, processing rows and topics searched; marker found 0 times",
		faults, pgCuts, mboxCuts, len(all))
}
