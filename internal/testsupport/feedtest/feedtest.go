// Package feedtest is the test feed of docs/first-feed.md — PEK in Asia/Shanghai,
// a full-day request for today, the topics KAFKA_SCHD and KAFKA_MSG — on
// a test's own services, as a --config file (Config, WriteConfig) and as a
// FlightFeed manifest (Manifest), for the tests that run the built binary.
package feedtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Feed is the test feed on one test's services.
type Feed struct {
	MailboxDSN, DatabaseDSN string
	Brokers                 []string
	// PollInterval and BatchSize of the mailbox: 100ms and 200 when zero.
	PollInterval string
	BatchSize    int
	// Pump, when set, is the inside of the pump section
	// ("backoffInitial: 50ms, backoffMax: 1s").
	Pump string
	// Plaintext opts the mailbox and the database in to plain text
	// (tls: {mode: disable}), for DSNs that reach the services at an
	// address other than loopback (the local cluster's pods).
	Plaintext bool
}

// Config is the feed as a --config file (DSNs inline).
func (f Feed) Config() string {
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, %s%s}
database: {dsn: %q%s}
kafka: {brokers: [%s], topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}
requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}
`, f.MailboxDSN, f.polling(), f.optIn(), f.DatabaseDSN, f.optIn(), f.brokers())
	if f.Pump != "" {
		doc += "pump: {" + f.Pump + "}\n"
	}
	return doc
}

// WriteConfig writes Config to name.yaml in the test's temporary directory
// and returns its path.
func (f Feed) WriteConfig(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(f.Config()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Manifest is the feed as the FlightFeed name in namespace, its DSNs in
// the Secrets <name>-mailbox and <name>-db (key dsn).
func (f Feed) Manifest(name, namespace string) string {
	doc := fmt.Sprintf(`
apiVersion: flightfeed.aero/v1alpha1
kind: FlightFeed
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  airport: {iata: PEK, timeZone: Asia/Shanghai}
  mailbox: {dsnSecretRef: {name: %[1]s-mailbox, key: dsn}, %[3]s%[5]s}
  database: {dsnSecretRef: {name: %[1]s-db, key: dsn}%[5]s}
  kafka: {brokers: [%[4]s], topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}
  requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}
`, name, namespace, f.polling(), f.brokers(), f.optIn())
	if f.Pump != "" {
		doc += "  pump: {" + f.Pump + "}\n"
	}
	return doc
}

// optIn is the plain-text opt-in of a section, or nothing.
func (f Feed) optIn() string {
	if !f.Plaintext {
		return ""
	}
	return ", tls: {mode: disable}"
}

func (f Feed) polling() string {
	poll, batch := f.PollInterval, f.BatchSize
	if poll == "" {
		poll = "100ms"
	}
	if batch == 0 {
		batch = 200
	}
	return fmt.Sprintf("pollInterval: %s, batchSize: %d", poll, batch)
}

func (f Feed) brokers() string {
	quoted := make([]string, len(f.Brokers))
	for i, b := range f.Brokers {
		quoted[i] = strconv.Quote(b)
	}
	return strings.Join(quoted, ", ")
}
