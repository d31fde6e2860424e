package cli

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// closingServer accepts TCP connections and closes them at once: a MySQL
// server that dies during the handshake.
func closingServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// writeFeed writes a config file for one mailbox, database and broker,
// with the full-day requests off.
func writeFeed(t *testing.T, mailboxDSN, databaseDSN, broker string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms}
database: {dsn: %q}
kafka: {brokers: [%q]}
requests: {disabled: true}
`, mailboxDSN, databaseDSN, broker)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
