package mailbox

import (
	"fmt"

	"github.com/flightfeed/flightfeed/internal/config"
)

// dsnError builds an error about the mailbox DSN whose text holds no
// credential: the DSN is quoted only redacted, and what the driver said
// is scrubbed of the password (config.RedactError). The driver prints
// the address and database name it parsed, and a malformed DSN can put
// part of the password there (root:pa/ss@tcp(h) makes "ss@tcp(h)" the
// database).
func dsnError(dsn, format string, args ...any) error {
	return config.RedactError(fmt.Errorf(format, args...), dsn)
}

// redactDSN is the DSN as messages may quote it.
func redactDSN(dsn string) string { return config.RedactDSN(dsn) }
