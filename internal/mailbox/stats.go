package mailbox

import "database/sql"

// DB is the mailbox's connection pool, handed out for its metrics
// (database/sql statistics) only: every query of the mailbox stays here.
func (m *Mailbox) DB() *sql.DB { return m.db }
