package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

func writeConfig(t *testing.T, databaseDSN string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "feed.yaml")
	doc := `airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: "root@tcp(127.0.0.1:3306)/mbx", pollInterval: 100ms, batchSize: 200}
database: {dsn: "` + databaseDSN + `"}
kafka: {brokers: ["127.0.0.1:9092"], topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}
requests: {horizon: {from: 0, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}
`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	return runCLIContext(context.Background(), args...)
}

func runCLIContext(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelpListsEveryCommandOfTheContract(t *testing.T) {
	code, out, _ := runCLI("--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, cmd := range []string{"manager", "pump", "migrate", "export", "ledger", "simulate", "dead", "replay"} {
		if !strings.Contains(out, "\n  "+cmd+" ") {
			t.Errorf("--help does not list %q:\n%s", cmd, out)
		}
	}
}

func TestMigrateAppliesTheSchema(t *testing.T) {
	dsn := pgtest.New(t)
	code, out, errOut := runCLI("migrate", "--config", writeConfig(t, dsn))
	if code != 0 {
		t.Fatalf("migrate exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "applied 00001_flight_state.sql") || !strings.Contains(out, "schema at version") {
		t.Fatalf("migrate output:\n%s", out)
	}
	current, latest, err := store.SchemaVersion(context.Background(), dsn)
	if err != nil || current != latest {
		t.Fatalf("schema after migrate: %d of %d (%v)", current, latest, err)
	}
	// Running it again is harmless and applies nothing.
	code, out, _ = runCLI("migrate", "--config", writeConfig(t, dsn))
	if code != 0 || strings.Contains(out, "applied") {
		t.Fatalf("second migrate: exit %d\n%s", code, out)
	}
}

func TestBadConfigurationExitsTwoWithOneLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("airport: {iata: PEK}\nmailbox: {batchSize: 0}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"migrate"},
		{"migrate", "--config", path},
		{"migrate", "--config", filepath.Join(t.TempDir(), "absent.yaml")},
		{"migrate", "--no-such-flag"},
		{"export", "--config", path},
	} {
		code, _, errOut := runCLI(args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
		if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines != 0 || !strings.HasPrefix(errOut, "flightfeed: ") {
			t.Errorf("%v: want one line on stderr, got %q", args, errOut)
		}
	}
}

func TestMigrateReportsAnUnreachableDatabase(t *testing.T) {
	code, _, errOut := runCLI("migrate", "--config", writeConfig(t, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"))
	if code != exitFailed || !strings.Contains(errOut, "connect to database") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// The read API's concurrency cap must allow at least one request; a pump
// pod says so before it connects to anything.
func TestPumpPodRefusesANonPositiveReadAPICap(t *testing.T) {
	code, _, errOut := runCLI("pump", "--feed", "airports/pek", "--api-max-concurrent-requests", "0")
	if code != exitUsage || errOut != "flightfeed: --api-max-concurrent-requests 0: must be at least 1\n" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// `pump` runs either a pump pod (--feed) or one feed without Kubernetes
// (--config): each bad mix is refused with its reason and exit 2, before
// anything is connected.
func TestPumpModesAreKeptApart(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--feed", "airports/pek", "--config", "x.yaml"}, "--feed runs a pump pod of a FlightFeed; --config and --drain run one feed without Kubernetes: use one or the other"},
		{[]string{"--feed", "airports/pek", "--drain"}, "--feed runs a pump pod of a FlightFeed; --config and --drain run one feed without Kubernetes: use one or the other"},
		{[]string{"--feed", "pek"}, `--feed "pek": want NAMESPACE/NAME`},
		{[]string{"--feed", "a/b/c"}, `--feed "a/b/c": want NAMESPACE/NAME`},
		{[]string{"--config", "x.yaml", "--lease-duration", "5s"}, "--lease-duration needs --feed NS/NAME"},
		{[]string{"--api-bind-address", ":9"}, "--api-bind-address needs --feed NS/NAME"},
	} {
		code, _, errOut := runCLI(append([]string{"pump"}, c.args...)...)
		if code != exitUsage || errOut != "flightfeed: "+c.want+"\n" {
			t.Errorf("pump %v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

// The scraper token flags go together and ask for a lifetime the API
// server issues; each refusal says why, before anything connects.
func TestManagerScraperTokenFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scraper-token-secret", "s"}, "--scraper-token-secret and --scraper-service-account go together: the Secret holds that ServiceAccount's tokens"},
		{[]string{"--scraper-service-account", "sa"}, "--scraper-token-secret and --scraper-service-account go together: the Secret holds that ServiceAccount's tokens"},
		{[]string{"--scraper-token-secret", "s", "--scraper-service-account", "sa", "--scraper-token-ttl", "5m"}, "--scraper-token-ttl 5m0s: the API server issues tokens of at least 10m0s"},
	} {
		code, _, errOut := runCLI(append([]string{"manager", "--pump-image", "flightfeed:1"}, c.args...)...)
		if code != exitUsage || errOut != "flightfeed: "+c.want+"\n" {
			t.Errorf("manager %v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

// The operator needs the pumps' image, from --pump-image or the defaults
// file, and refuses a defaults file with an unknown key (a misspelt chart
// value is not silently dropped).
func TestManagerNeedsThePumpImage(t *testing.T) {
	code, _, errOut := runCLI("manager")
	if code != exitUsage || errOut != "flightfeed: the pump image is required: --pump-image or image in --pump-defaults\n" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "defaults.yaml")
	if err := os.WriteFile(bad, []byte("image: flightfeed:1\nresource: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI("manager", "--pump-defaults", bad)
	if code != exitUsage || !strings.Contains(errOut, `unknown field "resource"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI("manager", "--pump-image", "flightfeed:1", "--secret-reader-clusterrole", "r", "--service-account", "nope")
	if code != exitUsage || errOut != `flightfeed: --service-account "nope": want NAMESPACE/NAME`+"\n" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
