package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/store"
)

// Open's and Migrate's errors name the database without ever showing its password, even
// when the DSN is malformed so that pgx mistakes part of the password for
// the host or the database name. No database is needed: each DSN fails.
func TestOpenErrorsNeverShowThePassword(t *testing.T) {
	const marker = "Zq9Marker"
	for _, c := range []struct{ dsn, want string }{
		// An unescaped '@' in the password: pgx would dial "ss@Zq9Marker@127.0.0.1".
		{"postgres://postgres:p@ss@" + marker + "@127.0.0.1:1/ff?connect_timeout=2", "parse database DSN postgres://***@127.0.0.1:1/ff"},
		// An unescaped '/': the password's tail would be the database name.
		{"postgres://postgres:5432/" + marker + "@127.0.0.1:1/ff?connect_timeout=2", "percent-encode"},
		{"postgres://postgres:" + marker + "@127.0.0.1:x/ff", "parse database DSN postgres://***@127.0.0.1:x/ff: invalid port"},
		{"host=127.0.0.1 port=x user=postgres password=" + marker + " dbname=ff", "parse database DSN host=127.0.0.1 port=x user=postgres password=*** dbname=ff: invalid port"},
		{"postgres://postgres:" + marker + "@127.0.0.1:1/ff?connect_timeout=2", "connect to database 127.0.0.1/ff"},
		{"host=127.0.0.1 port=1 password='" + marker + "' dbname=ff connect_timeout=2", "connect to database 127.0.0.1/ff"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := store.Open(ctx, c.dsn, store.Options{})
		cancel()
		if err == nil {
			s.Close()
			t.Errorf("%s: opened", c.dsn)
			continue
		}
		// Migrate connects on its own (the operator migrates before it
		// opens the store): the same care.
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		_, merr := store.Migrate(ctx, c.dsn)
		cancel()
		for what, err := range map[string]error{"Open": err, "Migrate": merr} {
			if err == nil {
				t.Errorf("%s %s: no error", what, c.dsn)
				continue
			}
			if strings.Contains(err.Error(), marker[2:]) {
				t.Errorf("%s %s: error shows the password: %s", what, c.dsn, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s: error %q does not say %q", what, c.dsn, err, c.want)
			}
		}
	}
}

// Open and Migrate refuse a database DSN key outside config.DatabaseKeys,
// and a libpq environment variable that names a file, before they touch
// the file or the network: the error names the key or the variable, not
// a failed connection.
func TestOpenRefusesFileKeys(t *testing.T) {
	const base = "postgres://postgres@127.0.0.1:1/ff?sslmode=disable&connect_timeout=2"
	for _, c := range []struct{ dsn, env, want string }{
		{base + "&passfile=/var/run/secrets/kubernetes.io/serviceaccount/token", "", `key "passfile" is refused`},
		{base + "&sslrootcert=/etc/passwd", "", `key "sslrootcert" is refused`},
		{"host=127.0.0.1 port=1 dbname=ff servicefile=/tmp/x service=evil", "", `key "servicefile" is refused`},
		{base + "&pool_max_conns=500", "", `key "pool_max_conns" is refused`},
		{base, "PGSSLROOTCERT", "environment variable PGSSLROOTCERT is set"},
		{base, "PGPASSFILE", "environment variable PGPASSFILE is set"},
	} {
		t.Run(c.want, func(t *testing.T) {
			if c.env != "" {
				t.Setenv(c.env, "/var/run/secrets/kubernetes.io/serviceaccount/token")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := store.Open(ctx, c.dsn, store.Options{})
			if err == nil {
				s.Close()
			}
			_, merr := store.Migrate(ctx, c.dsn)
			for what, err := range map[string]error{"Open": err, "Migrate": merr} {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: got %v, want %q", what, err, c.want)
				}
			}
		})
	}
}
