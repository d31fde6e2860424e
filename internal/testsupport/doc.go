// Package testsupport groups the helpers that give each test its own real
// services: a fresh PostgreSQL database (pgtest), a fresh MariaDB mailbox
// (mysqltest), an in-process kfake Kafka broker on loopback TCP (kafkatest)
// and an envtest control plane (kubetest). `make test` starts the servers
// these helpers connect to; when one is missing a test fails with the
// command that fixes it, it never skips.
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
