package mailbox

import (
	"database/sql"
	"time"
)

// SetIOTimeout shortens DefaultIOTimeout for a test and returns the undo.
func SetIOTimeout(d time.Duration) func() {
	old := ioTimeout
	ioTimeout = d
	return func() { ioTimeout = old }
}

// MaxFetch is the largest body m fetches (max_allowed_packet less a
// margin; 0 when unknown).
func MaxFetch(m *Mailbox) int64 { return m.maxFetch }

// SetMaxFetch makes m fetch at most n bytes of a body, as if the server's
// max_allowed_packet were about that size.
func SetMaxFetch(m *Mailbox, n int64) { m.maxFetch = n }

// DB is m's connection pool (a test pins it to one connection to read the
// session's status counters around a call).
func DB(m *Mailbox) *sql.DB { return m.db }
