package config_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/config"
)

const dsnMarker = "Zq9DsnPassword"

// Each mailbox DSN option that would let a server read local files or
// weaken the connection is refused with a reason that names the option
// and never the password; harmless options pass, and the dangerous flags
// come back forced off.
func TestMailboxDSNPolicy(t *testing.T) {
	base := "app:" + dsnMarker + "@tcp(mysql:3306)/mbx"
	for _, c := range []struct{ query, want string }{
		{"allowAllFiles=true", "option allowAllFiles=true is refused: it lets the mailbox server read any local file"},
		{"allowAllFiles=1", "option allowAllFiles=true is refused"},
		{"allowCleartextPasswords=true", "option allowCleartextPasswords=true is refused"},
		{"allowOldPasswords=true", "option allowOldPasswords=true is refused"},
		{"allowFallbackToPlaintext=true", "option allowFallbackToPlaintext=true is refused"},
		{"multiStatements=true", "option multiStatements=true is refused"},
		{"tls=skip-verify", "option tls=skip-verify is refused: it accepts any server certificate"},
		{"tls=preferred", "option tls=preferred is refused"},
		{"tls=true&allowAllFiles=true&parseTime=true", "option allowAllFiles=true is refused"},
		{"allowAllFiles=maybe", "invalid bool value"},
		{"tls=custom", "unknown config name"},
		// An allow list: a server session variable, an option FlightFeed
		// does not check, a key a later driver may learn.
		{"sql_mode=ANSI", `option "sql_mode" is refused: the mailbox DSN takes only tls, timeout`},
		{"timeout=2s&autocommit=0", `option "autocommit" is refused`},
		{"parseTime=true&someFutureOption=1", `option "someFutureOption" is refused`},
		// Harmless, or switched off explicitly.
		{"allowAllFiles=false", ""},
		{"tls=true", ""},
		{"tls=false&timeout=2s&charset=utf8mb4&collation=utf8mb4_general_ci&loc=UTC", ""},
		{"interpolateParams=false&readTimeout=30s", ""},
	} {
		dsn := base + "?" + c.query
		cfg, err := config.MailboxConfig(dsn, nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.query, err)
		case c.want == "" && (cfg.AllowAllFiles || cfg.AllowCleartextPasswords || cfg.AllowOldPasswords || cfg.AllowFallbackToPlaintext || cfg.MultiStatements):
			t.Errorf("%s: a dangerous flag is on: %+v", c.query, cfg)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.query, err, c.want)
		case err != nil && strings.Contains(err.Error(), dsnMarker[3:]):
			t.Errorf("%s: the error shows the password: %v", c.query, err)
		}
	}
}

// The mailbox is a TCP server: a unix socket (or another transport) of the
// pump's own pod is refused, whatever the options; a password with '?' and
// '/' does not confuse the option check.
func TestMailboxDSNAddress(t *testing.T) {
	for dsn, want := range map[string]string{
		"app:" + dsnMarker + "@unix(/var/run/mysqld/mysqld.sock)/mbx":   "address unix(…) is refused: the mailbox is reached over TCP",
		"app:" + dsnMarker + "@unix(/run/secrets/x)/mbx?parseTime=true": "address unix(…) is refused",
		"app:" + dsnMarker + "@tcp(mysql:3306)/mbx":                     "",
		"app:" + dsnMarker + "@tcp6([::1]:3306)/mbx":                    "",
		"app:p?w/d@tcp(mysql:3306)/mbx?timeout=1s":                      "",
		"app:" + dsnMarker + "@/mbx":                                    "",
	} {
		_, err := config.MailboxConfig(dsn, nil)
		if (want == "" && err != nil) || (want != "" && (err == nil || !strings.Contains(err.Error(), want))) {
			t.Errorf("%s: got %v, want %q", dsn, err, want)
		}
		if err != nil && strings.Contains(err.Error(), dsnMarker[3:]) {
			t.Errorf("%s: the error shows the password: %v", dsn, err)
		}
	}
}

// A database DSN may hold only the keys of config.DatabaseKeys, in URI and
// keyword/value form; a key that reads a local file is named as such.
func TestDatabaseDSNPolicy(t *testing.T) {
	for _, c := range []struct{ dsn, want string }{
		{"postgres://u:" + dsnMarker + "@db/ff?passfile=/var/run/secrets/kubernetes.io/serviceaccount/token", `key "passfile" is refused: it makes the driver read a local file`},
		{"postgres://u:" + dsnMarker + "@db/ff?sslmode=verify-full&sslrootcert=/etc/passwd", `key "sslrootcert" is refused: it makes the driver read a local file`},
		{"postgres://db/ff?sslcert=/a&sslkey=/b", `key "sslcert" is refused`},
		{"postgres://db/ff?service=x", `key "service" is refused`},
		{"postgres://db/ff?servicefile=/tmp/s.conf", `key "servicefile" is refused`},
		{"postgres://db/ff?pool_max_conns=100", `key "pool_max_conns" is refused: a database DSN may hold only host, port`},
		{"postgres://db/ff?options=-c%20search_path%3Devil", `key "options" is refused`},
		{"host=db password='" + dsnMarker + " x' dbname=ff sslkey=/k", `key "sslkey" is refused`},
		{"host=db user=u password=" + dsnMarker + " passfile = '/p q'", `key "passfile" is refused`},
		{"host=db dbname=ff sslpassword=x", `key "sslpassword" is refused`},
		// Allowed.
		{"postgres://u:" + dsnMarker + "@db:5432/ff?sslmode=verify-full&connect_timeout=5&application_name=ff&target_session_attrs=read-write", ""},
		{"postgres://postgres@127.0.0.1:5432/ff?sslmode=disable", ""},
		{"host=db port=5432 dbname=ff user=u password='" + dsnMarker + "' sslmode=require statement_timeout=0 tcp_keepalives_idle=60", ""},
		{"postgresql://db/ff?database=ff&user=u&password=x&idle_in_transaction_session_timeout=1000", ""},
	} {
		err := config.CheckDatabaseDSN(c.dsn)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.dsn, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.dsn, err, c.want)
		case err != nil && strings.Contains(err.Error(), dsnMarker[3:]):
			t.Errorf("%s: the error shows the password: %v", c.dsn, err)
		}
	}
}

// A libpq environment variable that names a file is refused: pgconn would
// read the file whatever the DSN says.
func TestDatabaseFileEnvironmentIsRefused(t *testing.T) {
	for _, name := range config.FileEnvironment {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "/var/run/secrets/kubernetes.io/serviceaccount/token")
			err := config.CheckDatabaseDSN("postgres://postgres@127.0.0.1:5432/ff?sslmode=disable")
			if err == nil || !strings.Contains(err.Error(), "environment variable "+name+" is set") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// A config file with a refused DSN option fails to load with one line
// that names the field and the option and hides the password.
func TestFileRefusesDangerousDSNOptions(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{`"root@tcp(127.0.0.1:3306)/mbx"`, `"root:` + dsnMarker + `@tcp(127.0.0.1:3306)/mbx?allowAllFiles=true"`,
			`mailbox.dsn: Invalid value: "***@tcp(127.0.0.1:3306)/mbx?allowAllFiles=true": option allowAllFiles=true is refused`},
		{`"root@tcp(127.0.0.1:3306)/mbx"`, `"root:` + dsnMarker + `@tcp(127.0.0.1:3306)/mbx?tls=skip-verify"`,
			`mailbox.dsn: Invalid value: "***@tcp(127.0.0.1:3306)/mbx?tls=skip-verify": option tls=skip-verify is refused`},
		{`"postgres://postgres@127.0.0.1:5432/ff?sslmode=disable"`, `"postgres://postgres:` + dsnMarker + `@127.0.0.1:5432/ff?passfile=/etc/passwd"`,
			`database.dsn: Invalid value: "postgres://***@127.0.0.1:5432/ff?passfile=/etc/passwd": key "passfile" is refused`},
	} {
		doc := strings.Replace(minimal, c.from, c.to, 1)
		_, err := config.Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
			continue
		}
		if strings.Contains(err.Error(), dsnMarker[3:]) || strings.Contains(err.Error(), "\n") {
			t.Errorf("not one line without the password: %q", err)
		}
	}
}

// channel_binding is an allowed database key, so a DSN can insist on
// SCRAM-SHA-256-PLUS; pgconn takes it.
func TestDatabaseChannelBindingCanBeRequired(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:" + dsnMarker + "@db.ops:5432/ff?sslmode=verify-full&channel_binding=require",
		"host=db.ops user=u dbname=ff sslmode=verify-full channel_binding=require",
	} {
		if err := config.CheckDatabaseDSN(dsn); err != nil {
			t.Fatalf("%s: refused: %v", dsn, err)
		}
		cfg, err := pgconn.ParseConfigWithOptions(dsn, config.DatabaseParseOptions())
		if err != nil || cfg.ChannelBinding != "require" {
			t.Fatalf("%s: pgconn %v, channel_binding %q", dsn, err, cfg.ChannelBinding)
		}
	}
}
