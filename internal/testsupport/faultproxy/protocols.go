package faultproxy

import (
	"bytes"
	"encoding/binary"
	"strings"
)

// PostgresCommit reports whether chunk, a read from a PostgreSQL client,
// holds a frontend message that commits a transaction: a simple Query
// ('Q') or an extended-protocol Parse ('P') whose text is COMMIT (also
// COMMIT WORK/TRANSACTION, END; any case, a trailing semicolon). pgx sends
// Tx.Commit as the simple query "commit" (Exec without arguments uses the
// simple protocol). The startup and SSL request messages, which have no
// type byte, never match.
func PostgresCommit(chunk []byte) bool {
	for len(chunk) >= 5 {
		typ := chunk[0]
		n := int(binary.BigEndian.Uint32(chunk[1:5]))
		if n < 4 || 1+n > len(chunk) {
			return false // not a whole message (a startup message, or split)
		}
		body := chunk[5 : 1+n]
		switch typ {
		case 'Q':
			if isCommit(cstring(body)) {
				return true
			}
		case 'P':
			// Parse: statement name, then the query, each NUL-terminated.
			if i := bytes.IndexByte(body, 0); i >= 0 && isCommit(cstring(body[i+1:])) {
				return true
			}
		}
		chunk = chunk[1+n:]
	}
	return false
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func isCommit(q string) bool {
	q = strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(q), ";")))
	switch q {
	case "commit", "commit work", "commit transaction", "end", "end work", "end transaction":
		return true
	}
	return false
}

// MySQLQuery returns the text of the COM_QUERY packet that chunk, a read
// from a MySQL client, starts with (ok false for any other packet). The
// MySQL driver sends a query with its arguments interpolated as one
// COM_QUERY (interpolateParams, which the mailbox sets).
func MySQLQuery(chunk []byte) (query string, ok bool) {
	if len(chunk) < 5 {
		return "", false
	}
	n := int(chunk[0]) | int(chunk[1])<<8 | int(chunk[2])<<16
	const comQuery = 0x03
	if n < 1 || chunk[4] != comQuery {
		return "", false
	}
	end := min(4+n, len(chunk))
	return string(chunk[5:end]), true
}
