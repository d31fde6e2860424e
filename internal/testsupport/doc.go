// Package testsupport groups the helpers that give each test its own real
// services: a fresh PostgreSQL database (pgtest), the same migrated for the
// store with a fencing epoch taken (storetest), a kfake Kafka broker on
// loopback TCP, in-process or the shared one `make test` runs (kafkatest), and an envtest control plane
// with its TestMain and client (kubetest); the built binary, the processes
// of it a test starts (Proc: output, logs, kill, freeze, readiness), a
// feed's world of services with the write audit, and the TestMain of the
// packages that run it against a control plane (proctest: the one process
// harness of internal/e2e, internal/reliability and hack/cluster/e2e), and
// the example feed of docs/first-feed.md as its --config file and as a
// FlightFeed manifest (feedtest); an in-process TCP proxy that resets,
// refuses, stalls, slows or cuts a dependency's connections (faultproxy);
// golden files (golden); and the two waits
// every package shares: one Eventually (await) and one free loopback
// address (loopback). The fresh MariaDB mailbox is
// internal/mailbox/mailboxtest, beside the schema it creates.
// storetest also holds ApplyIncrement and DeleteFlights, the one-message
// forms of the working set that only tests use, and the snapshot records
// tests build (Record, FullRecord). This package itself only names test
// databases (for mailboxtest too). `make test` starts the servers these
// helpers connect to; when one is missing a test fails with the command
// that fixes it, it never skips. Production code must not import any of
// them (depguard in .golangci.yml makes it a lint error).
package testsupport

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

var unsafeChars = regexp.MustCompile(`[^a-z0-9]+`)

// DatabaseName returns a unique, identifier-safe database name derived from
// the test's name, so parallel tests never share a database and a leftover
// database says which test made it.
func DatabaseName(t testing.TB) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random database suffix: %v", err)
	}
	base := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "_"), "_")
	if len(base) > 40 {
		base = base[:40]
	}
	return "fft_" + base + "_" + hex.EncodeToString(b[:])
}
