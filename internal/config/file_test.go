package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
)

// minimal is the minimal file docs/configuration.md shows, which must be accepted as it is.
const minimal = `
airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: "root@tcp(127.0.0.1:3306)/mbx", pollInterval: 100ms, batchSize: 200}
database: {dsn: "postgres://postgres@127.0.0.1:5432/ff?sslmode=disable"}
kafka: {brokers: ["127.0.0.1:9092"], topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}
requests: {horizon: {from: 0, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}
`

func TestMinimalFileIsAcceptedWithDefaults(t *testing.T) {
	feed, err := config.Parse([]byte(minimal))
	if err != nil {
		t.Fatalf("minimal config refused: %v", err)
	}
	s := feed.Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"mailbox dsn", feed.Secrets.MailboxDSN, "root@tcp(127.0.0.1:3306)/mbx"},
		{"database dsn", feed.Secrets.DatabaseDSN, "postgres://postgres@127.0.0.1:5432/ff?sslmode=disable"},
		{"time zone", feed.Location.String(), "Asia/Shanghai"},
		{"poll interval", s.Mailbox.PollInterval.Duration, 100 * time.Millisecond},
		{"batch size", s.Mailbox.BatchSize, int32(200)},
		{"inbound table", s.Mailbox.Inbound.Table, "CMINMSGS"},
		{"result column", s.Mailbox.Inbound.ResultColumn, "CMINMSGS_PROC_RESULT"},
		{"outbound routing column", s.Mailbox.Outbound.RoutingIDColumn, "ROUTINGID"},
		{"max message bytes", s.Mailbox.MaxMessageBytes, int64(40 << 20)},
		{"max batch bytes", s.Mailbox.MaxBatchBytes, int64(16 << 20)},
		{"plausible window", s.History.PlausibleWindow.Duration, 365 * 24 * time.Hour},
		{"dedup window", s.Mailbox.DedupWindow.Duration, 24 * time.Hour},
		{"dnld full day", s.Mailbox.DNLDFullDay, false},
		{"RECS_DROP share", s.Mailbox.RecsDropPercent, int32(20)},
		{"horizon", *s.Requests.Horizon, v1alpha1.HorizonSpec{From: 0, To: 1}},
		{"request interval", s.Requests.Interval.Duration, time.Hour},
		{"request timeout", s.Requests.Timeout.Duration, 5 * time.Minute},
		{"state topic", s.Kafka.Topics.State, "KAFKA_SCHD"},
		{"auto topic creation", s.Kafka.AllowAutoTopicCreation, false},
		{"transactions on", feed.TransactionsOn(), true},
		{"transactional id prefix", s.Kafka.TransactionalIDPrefix, "flightfeed"},
		{"ledger days", *s.Retention.LedgerDays, int32(7)},
		{"trace log days", s.Retention.TraceLogDays, int32(90)},
		{"null-day retention", *s.Retention.NullDayDays, int32(7)},
		{"history age", s.History.ScheduledAge.Duration, 48 * time.Hour},
		{"unsupported retries", *s.Pump.UnsupportedRetryLimit, int32(3)},
		{"infra retries unlimited", s.Pump.InfraRetryLimit, int32(0)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// database.readDsn is the file's read-only role (the resource's
// readDsnSecretRef): a credential, kept out of the spec.
func TestReadDSNInAFile(t *testing.T) {
	const read = "postgres://reader@127.0.0.1:5432/ff?sslmode=disable"
	feed, err := config.Parse([]byte(strings.Replace(minimal, `database: {dsn: `, `database: {readDsn: "`+read+`", dsn: `, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if feed.Secrets.ReadDatabaseDSN != read || feed.Spec.Database.ReadDSNSecretRef != nil {
		t.Fatalf("read DSN %q, spec ref %v", feed.Secrets.ReadDatabaseDSN, feed.Spec.Database.ReadDSNSecretRef)
	}
	plain, err := config.Parse([]byte(minimal))
	if err != nil || plain.Secrets.ReadDatabaseDSN != "" {
		t.Fatalf("without readDsn: %q %v", plain.Secrets.ReadDatabaseDSN, err)
	}
}

func TestDefaultHorizonIsYesterdayToTomorrow(t *testing.T) {
	doc := strings.Replace(minimal, "requests: {horizon: {from: 0, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}", "", 1)
	feed, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if h := *feed.Spec.Requests.Horizon; h.From != -1 || h.To != 1 {
		t.Fatalf("default horizon = %+v, want -1..1", h)
	}
}

func TestBadFilesNameTheField(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(string) string
		wantErr []string
	}{
		{"unknown field", func(s string) string { return strings.Replace(s, "batchSize: 200", "batchsize: 200", 1) },
			[]string{"mailbox.batchsize", "unknown field"}},
		{"duplicate field", func(s string) string { return strings.Replace(s, "batchSize: 200", "batchSize: 200, batchSize: 3", 1) },
			[]string{"batchSize"}},
		{"wrong type", func(s string) string { return strings.Replace(s, "batchSize: 200", "batchSize: lots", 1) },
			[]string{"mailbox.batchSize", "whole number"}},
		{"bad duration", func(s string) string { return strings.Replace(s, "pollInterval: 100ms", "pollInterval: 100 millis", 1) },
			[]string{"mailbox.pollInterval", `invalid duration "100 millis"`}},
		{"batch size out of range", func(s string) string { return strings.Replace(s, "batchSize: 200", "batchSize: 20000", 1) },
			[]string{"mailbox.batchSize", "between 1 and 10000"}},
		{"missing mailbox dsn", func(s string) string { return strings.Replace(s, `dsn: "root@tcp(127.0.0.1:3306)/mbx", `, "", 1) },
			[]string{"mailbox.dsn", "Required"}},
		{"secret ref in a file", func(s string) string {
			return strings.Replace(s, `dsn: "root@tcp(127.0.0.1:3306)/mbx"`, `dsn: x, dsnSecretRef: {name: a, key: b}`, 1)
		}, []string{"mailbox.dsnSecretRef", "inline"}},
		{"read secret ref in a file", func(s string) string {
			return strings.Replace(s, `database: {dsn: `, `database: {readDsnSecretRef: {name: a, key: b}, dsn: `, 1)
		}, []string{"database.readDsnSecretRef", "database.readDsn"}},
		{"ambiguous read dsn", func(s string) string {
			return strings.Replace(s, `database: {dsn: `, `database: {readDsn: "postgres://r:p@ss@db/ff", dsn: `, 1)
		}, []string{"database.readDsn", "percent-encode"}},
		{"unknown time zone", func(s string) string { return strings.Replace(s, "Asia/Shanghai", "Mars/Olympus", 1) },
			[]string{"airport.timeZone", "Mars/Olympus"}},
		{"bad iata", func(s string) string { return strings.Replace(s, "iata: PEK", "iata: pek1", 1) },
			[]string{"airport.iata"}},
		{"bad broker", func(s string) string { return strings.Replace(s, `"127.0.0.1:9092"`, `"localhost"`, 1) },
			[]string{"kafka.brokers[0]", "host:port"}},
		{"no brokers", func(s string) string { return strings.Replace(s, `brokers: ["127.0.0.1:9092"], `, "", 1) },
			[]string{"kafka.brokers", "Required"}},
		{"same topics", func(s string) string { return strings.Replace(s, "notice: KAFKA_MSG", "notice: KAFKA_SCHD", 1) },
			[]string{"kafka.topics.notice", "differ"}},
		{"horizon reversed", func(s string) string { return strings.Replace(s, "from: 0, to: 1", "from: 2, to: 1", 1) },
			[]string{"requests.horizon.from"}},
		{"sql injection in a table name", func(s string) string {
			return strings.Replace(s, "batchSize: 200", "batchSize: 200, inbound: {table: \"CMINMSGS; DROP TABLE x\"}", 1)
		}, []string{"mailbox.inbound.table", "SQL identifier"}},
		{"sasl without password", func(s string) string {
			return strings.Replace(s, `topics: {state`, `sasl: {mechanism: PLAIN, username: u}, topics: {state`, 1)
		}, []string{"kafka.sasl.password", "Required"}},
		{"sasl PLAIN without TLS", func(s string) string {
			return strings.Replace(s, `topics: {state`, `sasl: {mechanism: PLAIN, username: u, password: p}, topics: {state`, 1)
		}, []string{"kafka.sasl.mechanism", "PLAIN sends the password in clear text: SASL credentials go only over verified TLS: it needs kafka.tls"}},
		{"sasl SCRAM without TLS", func(s string) string {
			return strings.Replace(s, `topics: {state`, `sasl: {mechanism: SCRAM-SHA-512, username: u, password: p}, topics: {state`, 1)
		}, []string{"kafka.sasl.mechanism", `"SCRAM-SHA-512": SASL credentials go only over verified TLS: it needs kafka.tls`}},
		{"mailbox TLS CA not PEM", func(s string) string {
			return strings.Replace(s, "batchSize: 200", `batchSize: 200, tls: {ca: "not a certificate"}`, 1)
		}, []string{"mailbox.tls", "ca.crt holds no PEM certificate"}},
		{"database TLS certificate without key", func(s string) string {
			return strings.Replace(s, `database: {dsn:`, `database: {tls: {cert: "x"}, dsn:`, 1)
		}, []string{"database.tls", "tls.crt and tls.key must be given together"}},
		{"sasl mechanism", func(s string) string {
			return strings.Replace(s, `topics: {state`, `sasl: {mechanism: GSSAPI, username: u, password: p}, topics: {state`, 1)
		}, []string{"kafka.sasl.mechanism", "GSSAPI"}},
		{"bad transactional id prefix", func(s string) string {
			return strings.Replace(s, `topics: {state`, `transactionalIdPrefix: "ff/pek", topics: {state`, 1)
		}, []string{"kafka.transactionalIdPrefix", "ff/pek"}},
		{"transactions not a bool", func(s string) string {
			return strings.Replace(s, `topics: {state`, `transactions: maybe, topics: {state`, 1)
		}, []string{"kafka.transactions"}},
		{"backoff max below initial", func(s string) string { return s + "pump: {backoffInitial: 2s, backoffMax: 1s}\n" },
			[]string{"pump.backoffMax"}},
		{"not yaml", func(string) string { return "airport: [" }, []string{"YAML"}},
		{"empty", func(string) string { return "" }, []string{"empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.edit(minimal)))
			if err == nil {
				t.Fatal("accepted, want an error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, want := range c.wantErr {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "feed.yaml")
	if err := os.WriteFile(path, []byte(minimal), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); err != nil {
		t.Fatalf("load: %v", err)
	}
	_, err := config.Load(filepath.Join(dir, "missing.yaml"))
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
}

// The file mirrors every top-level section of the spec, so nothing that
// the resource can say is out of reach of a config file.
func TestFileCoversEverySpecSection(t *testing.T) {
	specFields := map[string]bool{}
	st := reflect.TypeFor[v1alpha1.FlightFeedSpec]()
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		specFields[name] = true
	}
	var doc strings.Builder
	doc.WriteString(minimal)
	for name := range specFields {
		if !strings.Contains(minimal, name+":") {
			doc.WriteString(name + ": {}\n")
		}
	}
	if _, err := config.Parse([]byte(doc.String())); err != nil {
		t.Fatalf("a file naming every spec section was refused: %v", err)
	}
}

// A number written as 0 is refused like any other out-of-range value (the
// resource's schema refuses it too); only an absent number takes the
// default.
func TestWrittenZeroIsRefusedAbsentIsDefaulted(t *testing.T) {
	_, err := config.Parse([]byte(strings.Replace(minimal, "batchSize: 200", "batchSize: 0", 1)))
	if err == nil || err.Error() != "mailbox.batchSize: Invalid value: 0: must be between 1 and 10000" {
		t.Fatalf("batchSize: 0 gave %v", err)
	}
	feed, err := config.Parse([]byte(strings.Replace(minimal, ", batchSize: 200", "", 1)))
	if err != nil || feed.Spec.Mailbox.BatchSize != config.DefaultBatchSize {
		t.Fatalf("absent batchSize: %v, %+v", err, feed)
	}
	for _, c := range []struct{ section, field, want string }{
		{"mailbox", "maxMessageBytes", "mailbox.maxMessageBytes: Invalid value: 0: must be between 1024 and 1073741824"},
		{"mailbox", "recsDropPercent", "mailbox.recsDropPercent: Invalid value: 0: must be between 1 and 100"},
		{"database", "maxConns", "database.maxConns: Invalid value: 0: must be between 2 and 64"},
		{"retention", "traceLogDays", "retention.traceLogDays: Invalid value: 0: must be between 1 and 3650"},
		{"retention", "archiveDays", "retention.archiveDays: Invalid value: 0: must be between 1 and 3650"},
		{"retention", "deliveredEventDays", "retention.deliveredEventDays: Invalid value: 0: must be between 1 and 3650"},
	} {
		// Into the section's mapping when minimal has one, else a new one.
		doc := strings.Replace(minimal, c.section+": {", c.section+": {"+c.field+": 0, ", 1)
		if !strings.Contains(doc, c.field) {
			doc = minimal + c.section + ": {" + c.field + ": 0}\n"
		}
		_, err := config.Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s.%s: 0 gave %v", c.section, c.field, err)
		}
	}
}

// The producer's transactional.id belongs to the feed: "<prefix>.<namespace>.<name>"
// for a FlightFeed, the state database for a config file (the same for every
// process of one feed, different for two feeds); transactions can be
// switched off in the file.
func TestTransactionalIDOfTheFeed(t *testing.T) {
	feed, err := config.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	other, err := config.Parse([]byte(strings.Replace(minimal, "5432/ff?", "5432/ff2?", 1)))
	if err != nil {
		t.Fatal(err)
	}
	custom, err := config.Parse([]byte(strings.Replace(minimal, `topics: {state`, `transactionalIdPrefix: aodb-prod, topics: {state`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	resource := *feed
	resource.Namespace, resource.Name = "airports", "pek"
	for _, c := range []struct {
		name string
		feed *config.Feed
		want string
	}{
		{"config file", feed, "flightfeed.127.0.0.1:5432/ff"},
		{"another feed's file", other, "flightfeed.127.0.0.1:5432/ff2"},
		{"custom prefix", custom, "aodb-prod.127.0.0.1:5432/ff"},
		{"resource", &resource, "flightfeed.airports.pek"},
	} {
		got, err := c.feed.TransactionalID()
		if err != nil || got != c.want {
			t.Errorf("%s: %q (%v), want %q", c.name, got, err, c.want)
		}
	}
	off, err := config.Parse([]byte(strings.Replace(minimal, `topics: {state`, `transactions: false, topics: {state`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if off.TransactionsOn() {
		t.Error("kafka.transactions: false left transactions on")
	}
}
