package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
)

// The DSN checks are parsers of their own in front of the drivers' parsers,
// and a difference between the two is a way past the allow-list (a
// password holding '/', '?', '@' or ':' once made the mailbox check read
// the options of the wrong part of the DSN). The fuzz tests compare them:
// whatever the check accepts, the driver itself must parse into nothing
// but the options of the allow-list. `go test` runs the seeds (f.Add and
// testdata/fuzz/FuzzXxx); `go test -run '^$' -fuzz FuzzMailboxDSN
// ./internal/config/` searches for more.

// FuzzMailboxDSN: every mailbox DSN that config.MailboxConfig accepts is
// one go-sql-driver/mysql parses into options of config.MailboxOptions
// only (its own FormatDSN names each option its Config holds, session
// variables included), over TCP, with the dangerous flags off and an
// accepted tls value.
func FuzzMailboxDSN(f *testing.F) {
	for _, dsn := range []string{
		"root@tcp(127.0.0.1:3306)/mbx",
		"app:pw@tcp(mysql:3306)/mbx?tls=true&timeout=2s&parseTime=true&loc=Local&charset=utf8mb4",
		// Passwords holding the separators.
		"app:x/?timeout=1@tcp(h:3306)/mbx?sql_mode=ANSI",
		"app:p?w/d@tcp(mysql:3306)/mbx?timeout=1s",
		"app:p@ss:w/o?rd@tcp(mysql:3306)/mbx?tls=true",
		"app:x?sql_mode=ANSI@tcp(h:3306)/mbx",
		"app:x/@tcp(h:3306)/mbx?autocommit=0",
		"app:x&autocommit=0@tcp(h:3306)/mbx?charset=utf8mb4",
		"app:a:b:c@tcp(h:3306)/mbx?tls=false",
		"app:x@y/z?timeout=1s@tcp(h:3306)/mbx?multiStatements=true",
		"app:x@tcp(h:3306)/m?b?x?sql_mode=ANSI",
		// Repeated keys: the driver takes the last.
		"app:x@tcp(h:3306)/mbx?timeout=1s&timeout=2s",
		"app:x@tcp(h:3306)/mbx?allowAllFiles=false&allowAllFiles=true",
		"app:x@tcp(h:3306)/mbx?tls=true&tls=skip-verify",
		"app:x@tcp(h:3306)/mbx?multiStatements=true&multiStatements=false",
		// Options outside the allow-list, and driver-only ones.
		"app:x@tcp(h:3306)/mbx?connectionAttributes=a:b",
		"app:x@tcp(h:3306)/mbx?serverPubKey=k",
		"app:x@tcp(h:3306)/mbx?compress=true",
		"app:x@tcp(h:3306)/mbx?timeTruncate=1s",
		"app:x@tcp(h:3306)/mbx?=x&tls",
		"app:x@tcp(h:3306)/mbx?tls=preferred",
		"app:x@unix(/tmp/s)/mbx",
		"/mbx",
	} {
		f.Add(dsn, false)
		f.Add(dsn, true)
	}
	f.Fuzz(func(t *testing.T, dsn string, optIn bool) {
		var tlsSpec *v1alpha1.ServerTLS
		if optIn {
			tlsSpec = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified}
		}
		cfg, err := config.MailboxConfig(dsn, tlsSpec)
		if err != nil {
			return
		}
		raw, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatalf("MailboxConfig accepted %q, which the driver cannot parse: %v", dsn, err)
		}
		for _, key := range driverOptions(raw) {
			if !slices.Contains(config.MailboxOptions, key) {
				t.Fatalf("MailboxConfig accepted %q, whose option %q the driver parses", dsn, key)
			}
		}
		if cfg.AllowAllFiles || cfg.AllowCleartextPasswords || cfg.AllowOldPasswords || cfg.AllowFallbackToPlaintext || cfg.MultiStatements {
			t.Fatalf("MailboxConfig accepted %q with a dangerous flag on: %+v", dsn, cfg)
		}
		if cfg.Net != "tcp" && cfg.Net != "tcp4" && cfg.Net != "tcp6" {
			t.Fatalf("MailboxConfig accepted %q over %s", dsn, cfg.Net)
		}
		if !slices.Contains(config.MailboxTLSValues, raw.TLSConfig) && (!optIn || (raw.TLSConfig != "skip-verify" && raw.TLSConfig != "preferred")) {
			t.Fatalf("MailboxConfig accepted %q with tls=%s", dsn, raw.TLSConfig)
		}
	})
}

// driverOptions are the option keys the driver's Config holds, as its own
// FormatDSN writes them (user, password and address left out, so the
// query is what follows the one '?' of "/dbname?…").
func driverOptions(cfg *mysql.Config) []string {
	c := cfg.Clone()
	c.User, c.Passwd, c.Net, c.Addr = "", "", "", ""
	_, query, ok := strings.Cut(c.FormatDSN(), "?")
	if !ok {
		return nil
	}
	var keys []string
	for _, kv := range strings.Split(query, "&") {
		key, _, _ := strings.Cut(kv, "=")
		keys = append(keys, key)
	}
	return keys
}

// FuzzDatabaseDSN: every database DSN that config.CheckDatabaseDSN accepts
// is one pgconn parses with the same keys: pgconn's own allow-list
// (config.DatabaseParseOptions) refuses none of them, its runtime
// parameters (what the server receives as settings) are keys of
// config.DatabaseKeys, and nothing came from a Kerberos or client
// certificate option. A DSN pgconn cannot parse is refused when it opens.
func FuzzDatabaseDSN(f *testing.F) {
	for _, name := range append(slices.Clone(config.FileEnvironment), "PGOPTIONS", "PGSSLMODE", "PGREQUIREAUTH", "PGAPPNAME") {
		f.Setenv(name, "")
	}
	for _, dsn := range []string{
		"postgres://postgres@127.0.0.1:5432/ff?sslmode=disable",
		"postgres://u:p%40ss@db:5432/ff?sslmode=verify-full&channel_binding=require&require_auth=scram-sha-256",
		"postgresql://db/ff?database=ff&user=u&password=x&idle_in_transaction_session_timeout=1000",
		"host=db port=5432 dbname=ff user=u password='a b' sslmode=require statement_timeout=0 tcp_keepalives_idle=60",
		// Passwords holding the separators.
		"postgres://u:p@ss@db/ff?options=-c",
		"postgres://u:pa/ss@db/ff?passfile=/etc/passwd",
		"postgres://u:pa?ss@db/ff?passfile=/etc/passwd",
		"postgres://u:pa:ss@db:5432/ff?sslmode=verify-full",
		"postgres://u:a?passfile=/x@db/ff",
		"postgres://db?passfile=/x@h/ff",
		"host=db password=a\\ passfile=/x",
		"host=db password='it\\'s passfile=/x' options=-c",
		"host=db password=a'b passfile=/x",
		// Repeated keys: the last wins in both forms.
		"postgres://db/ff?sslmode=require&sslmode=disable",
		"postgres://db/ff?application_name=a&application_name=b",
		"postgres://db/ff?passfile=/x&passfile=",
		"host=db dbname=ff sslmode=require sslmode=disable",
		"host=db passfile=/x passfile=",
		// Where net/url and libpq split a URI differently.
		"postgres://db/ff?a=1;&passfile=/x",
		"postgres://db/ff?sslmode=disable#&options=-csearch_path%3Devil",
		"postgres://db/ff#?passfile=/x",
		"postgres://u@db/ff?pass%66ile=/etc/passwd",
		"postgres://u@db/ff?%20passfile=/x",
		"postgres://[::1]:5432,db:5433/ff?search_path=x",
		"postgres://[::1/ff?options=x",
		"postgres://db/ff?ssl=true",
		"postgres://db/ff?sslmode",
		"host = db user=u options=x",
		"host=db ssl=true",
		"",
	} {
		f.Add(dsn)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		if config.CheckDatabaseDSN(dsn) != nil {
			return
		}
		cfg, err := pgconn.ParseConfigWithOptions(dsn, config.DatabaseParseOptions())
		if err != nil {
			if strings.Contains(err.Error(), "ConnStringAllowedKeys") {
				t.Fatalf("CheckDatabaseDSN accepted %q, where pgconn sees a key outside the allow-list: %v", dsn, err)
			}
			return
		}
		for key := range cfg.RuntimeParams {
			if !slices.Contains(config.DatabaseKeys, key) {
				t.Fatalf("CheckDatabaseDSN accepted %q, which sends the server setting %q", dsn, key)
			}
		}
		if cfg.KerberosSrvName != "" || cfg.KerberosSpn != "" {
			t.Fatalf("CheckDatabaseDSN accepted %q, which sets Kerberos options", dsn)
		}
		if cfg.TLSConfig != nil && (len(cfg.TLSConfig.Certificates) > 0 || cfg.TLSConfig.GetClientCertificate != nil) {
			t.Fatalf("CheckDatabaseDSN accepted %q, which loads a client certificate", dsn)
		}
	})
}
