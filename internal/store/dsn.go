package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flightfeed/flightfeed/internal/config"
)

// dsnError builds an error about dsn whose text holds no credential: what
// is quoted of the DSN is redacted (config.RedactDSN) and whatever the
// driver said is scrubbed of every split of the password
// (config.RedactError), since pgx prints hosts and database names parsed
// out of a DSN that may hold a mislaid password.
func dsnError(dsn string, format string, args ...any) error {
	return config.RedactError(fmt.Errorf(format, args...), dsn)
}

// parseReason drops the connection string that pgx quotes in a parse
// error (redacted only "best effort", pgconn says): the caller quotes the
// DSN redacted, so only the reason is kept.
func parseReason(err error) error {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return err
	}
	text := pe.Error()
	if i := strings.LastIndex(text, "`: "); strings.HasPrefix(text, "cannot parse `") && i >= 0 {
		return &reasonError{reason: text[i+len("`: "):], err: err}
	}
	return err
}

// reasonError shows only the reason of a parse error and unwraps to it.
type reasonError struct {
	reason string
	err    error
}

func (e *reasonError) Error() string { return e.reason }
func (e *reasonError) Unwrap() error { return e.err }

// parseConnConfig parses a database DSN with pgconn's allow-list of keys
// (config.DatabaseKeys): a key that would read a local file (passfile,
// sslrootcert…) is refused before the file system is touched, whatever
// config.CheckDatabaseDSN made of the DSN.
func parseConnConfig(dsn string) (*pgx.ConnConfig, error) {
	return pgx.ParseConfigWithOptions(dsn, pgx.ParseConfigOptions{ParseConfigOptions: config.DatabaseParseOptions()})
}

// parsePoolConfig is parseConnConfig for a pool. pgxpool parses its own
// keys (pool_max_conns…) out of the DSN with no allow-list, so the pool is
// built from an empty DSN (defaults only) and given the checked
// connection config; the pool's size comes from the spec.
func parsePoolConfig(dsn string) (*pgxpool.Config, error) {
	conn, err := parseConnConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig = conn
	return cfg, nil
}
