package store

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
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
// config.CheckDatabaseDSN made of the DSN. application_name defaults to
// $POD_NAME (the pump pod's name); require_auth to
// config.DefaultRequireAuth. Its connections refuse a
// server message above MessageBound(0) (bound.go); Open raises that to
// the feed's.
func parseConnConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfigWithOptions(dsn, pgx.ParseConfigOptions{ParseConfigOptions: config.DatabaseParseOptions()})
	if err != nil {
		return nil, err
	}
	cfg.BuildFrontend = boundFrontend(0)
	// pgx answers a cleartext or MD5 password request unless told not to;
	// only a require_auth the DSN (or $PGREQUIREAUTH) names opts back in.
	if cfg.RequireAuth == "" {
		cfg.RequireAuth = config.DefaultRequireAuth
	}
	// A pump pod's sessions carry its name (pg_stat_activity), unless the
	// DSN names them itself: which pod holds a session is visible.
	if pod := os.Getenv("POD_NAME"); pod != "" && cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = pod
	}
	return cfg, nil
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

// ConnOption changes how Migrate, SchemaVersion and PrepareSchema connect.
type ConnOption func(*pgconn.Config)

// WithTLS connects with cfg (config.Feed.DatabaseTLS); nil changes nothing.
func WithTLS(cfg *tls.Config) ConnOption {
	return func(c *pgconn.Config) { applyTLS(c, cfg) }
}

// applyTLS makes every connection attempt use base, verified (its
// ServerName defaulting to the host tried), whatever the DSN's sslmode
// said: sslmode=prefer's plain-text fallbacks go, one attempt per host
// stays. nil base leaves c as parsed.
func applyTLS(c *pgconn.Config, base *tls.Config) {
	if base == nil {
		return
	}
	forHost := func(host string) *tls.Config {
		t := base.Clone()
		if t.ServerName == "" {
			t.ServerName = host
		}
		return t
	}
	c.TLSConfig = forHost(c.Host)
	type target struct {
		host string
		port uint16
	}
	seen := map[target]bool{{c.Host, c.Port}: true}
	var fallbacks []*pgconn.FallbackConfig
	for _, fb := range c.Fallbacks {
		if seen[target{fb.Host, fb.Port}] {
			continue
		}
		seen[target{fb.Host, fb.Port}] = true
		fallbacks = append(fallbacks, &pgconn.FallbackConfig{Host: fb.Host, Port: fb.Port, TLSConfig: forHost(fb.Host)})
	}
	c.Fallbacks = fallbacks
}
