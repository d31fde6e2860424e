// Package mailbox ships the DDL of the shared SIS mailbox (CMINMSGS and
// COUTMSGS, SPEC §3.2) for tests and the demo. The AODB side owns the real
// mailbox; the product never creates it in production.
package mailbox

import (
	_ "embed"
	"strings"
)

//go:embed mailbox.sql
var ddl string

// DDL returns the mailbox's CREATE TABLE statements, one per element, each
// safe to run again (IF NOT EXISTS).
func DDL() []string {
	// Comments go first: they may hold semicolons of their own.
	var lines []string
	for _, line := range strings.Split(ddl, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
			lines = append(lines, line)
		}
	}
	var out []string
	for _, stmt := range strings.Split(strings.Join(lines, "\n"), ";") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			out = append(out, stmt)
		}
	}
	return out
}
