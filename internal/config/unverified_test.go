package config_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
)

// What each DSN reaches over TLS that does not verify the server's
// certificate, and whether that stops the feed: sslmode require, prefer
// and allow (the database, beyond loopback) and tls=skip-verify or
// tls=preferred (the mailbox, any address) are refused unless the
// dependency opted in (mode unverified, or disable which takes plain text
// too); verify-ca and verify-full pass; verified TLS of FlightFeed's making
// wins over the database DSN.
func TestUnverifiedTLSDecision(t *testing.T) {
	verify := &v1alpha1.ServerTLS{}
	unverified := &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified}
	disable := &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable}
	for _, tc := range []struct {
		name     string
		mailbox  bool
		dsn      string
		tls      *v1alpha1.ServerTLS
		want     []string
		setting  string
		refused  bool
		optedIn  bool
		warnPart string
	}{
		{name: "database sslmode=require", dsn: "postgres://u:p@db.ops/ff?sslmode=require",
			want: []string{"db.ops:5432"}, setting: "sslmode=require", refused: true},
		{name: "database sslmode=prefer", dsn: "postgres://u:p@db.ops/ff?sslmode=prefer",
			want: []string{"db.ops:5432"}, setting: "sslmode=prefer", refused: true},
		{name: "database sslmode absent (prefer)", dsn: "postgres://u:p@db.ops:6432/ff",
			want: []string{"db.ops:6432"}, setting: "sslmode=prefer", refused: true},
		{name: "database sslmode=allow", dsn: "host=db.ops port=6432 user=u dbname=ff sslmode=allow",
			want: []string{"db.ops:6432"}, setting: "sslmode=allow", refused: true},
		{name: "database sslmode=require, several hosts", dsn: "postgres://u:p@127.0.0.1:5432,db.ops:5433,db2.ops:5434/ff?sslmode=require",
			want: []string{"db.ops:5433", "db2.ops:5434"}, setting: "sslmode=require", refused: true},
		{name: "database sslmode=verify-ca", dsn: "postgres://u:p@db.ops/ff?sslmode=verify-ca"},
		{name: "database sslmode=verify-full", dsn: "postgres://u:p@db.ops/ff?sslmode=verify-full&channel_binding=require"},
		{name: "database sslmode=disable is plain text, not unverified TLS", dsn: "postgres://u:p@db.ops/ff?sslmode=disable"},
		{name: "database sslmode=require on 127.0.0.1", dsn: "postgres://postgres@127.0.0.1:5432/ff?sslmode=require"},
		{name: "database sslmode absent on localhost", dsn: "postgres://postgres@localhost/ff"},
		{name: "database sslmode=require on ::1", dsn: "postgres://postgres@[::1]:5432/ff?sslmode=require"},
		{name: "database on a Unix socket", dsn: "host=/var/run/postgresql dbname=ff sslmode=require"},
		{name: "database.tls wins over sslmode=require", dsn: "postgres://u:p@db.ops/ff?sslmode=require", tls: verify},
		{name: "database opted in", dsn: "postgres://u:p@db.ops/ff?sslmode=require", tls: unverified,
			want: []string{"db.ops:5432"}, setting: "sslmode=require", optedIn: true, warnPart: "database db.ops:5432 (sslmode=require)"},
		{name: "database opted in to plain text takes unverified TLS too", dsn: "postgres://u:p@db.ops/ff?sslmode=prefer", tls: disable,
			want: []string{"db.ops:5432"}, setting: "sslmode=prefer", optedIn: true, warnPart: "database db.ops:5432 (sslmode=prefer)"},
		{name: "database opted in, verify-full: nothing to warn of", dsn: "postgres://u:p@db.ops/ff?sslmode=verify-full", tls: unverified,
			optedIn: true},

		{name: "mailbox tls=skip-verify", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx?tls=skip-verify",
			want: []string{"mysql.ops:3306"}, setting: "tls=skip-verify", refused: true},
		{name: "mailbox tls=preferred", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx?tls=preferred",
			want: []string{"mysql.ops:3306"}, setting: "tls=preferred", refused: true},
		{name: "mailbox tls=skip-verify on loopback (refused as before)", mailbox: true, dsn: "root@tcp(127.0.0.1:3306)/mbx?tls=skip-verify",
			want: []string{"127.0.0.1:3306"}, setting: "tls=skip-verify", refused: true},
		{name: "mailbox tls=skip-verify under mailbox.tls of mode verify", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx?tls=skip-verify", tls: verify,
			want: []string{"mysql.ops:3306"}, setting: "tls=skip-verify", refused: true},
		{name: "mailbox tls=true", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx?tls=true"},
		{name: "mailbox tls=false is plain text, not unverified TLS", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx?tls=false"},
		{name: "mailbox opted in", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx?tls=skip-verify", tls: unverified,
			want: []string{"mysql.ops:3306"}, setting: "tls=skip-verify", optedIn: true, warnPart: "mailbox mysql.ops:3306 (tls=skip-verify)"},
		{name: "mailbox opted in to plain text", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx?tls=preferred", tls: disable,
			want: []string{"mysql.ops:3306"}, setting: "tls=preferred", optedIn: true, warnPart: "mailbox mysql.ops:3306 (tls=preferred)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u config.Unverified
			if tc.mailbox {
				u = config.MailboxUnverified(tc.dsn, tc.tls)
			} else {
				u = config.DatabaseUnverified("database", tc.dsn, tc.tls)
			}
			if !slices.Equal(u.Addresses, tc.want) || u.Setting != tc.setting || u.Refused() != tc.refused || u.OptedIn != tc.optedIn {
				t.Fatalf("got %+v (refused %v), want addresses %q, setting %q, refused %v, opted in %v", u, u.Refused(), tc.want, tc.setting, tc.refused, tc.optedIn)
			}
			err := u.Err()
			if (err != nil) != tc.refused {
				t.Fatalf("Err() = %v, refused %v", err, tc.refused)
			}
			if err != nil {
				if !errors.Is(err, config.ErrUnverifiedTLS) {
					t.Errorf("Err() %v is not ErrUnverifiedTLS", err)
				}
				for _, w := range append(slices.Clone(tc.want), tc.setting, "is refused", "{mode: unverified}") {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				if strings.Contains(err.Error(), ":p@") || strings.Contains(err.Error(), "\n") {
					t.Errorf("error shows the password or is not one line: %q", err)
				}
			}
			warn := config.UnverifiedWarning([]config.Unverified{u})
			if tc.warnPart == "" && warn != "" || !strings.Contains(warn, tc.warnPart) {
				t.Errorf("warning %q, want one saying %q", warn, tc.warnPart)
			}
		})
	}
}

// The mailbox DSN's tls=skip-verify and tls=preferred are refused (as
// ErrUnverifiedTLS) without mailbox.tls's opt-in and accepted with it;
// tls=preferred then loses its plain-text fallback, and the DSN's own
// allowFallbackToPlaintext=true stays refused.
func TestMailboxUnverifiedTLSOptIn(t *testing.T) {
	unverified := &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified}
	disable := &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable}
	base := "app:" + dsnMarker + "@tcp(mysql:3306)/mbx?"
	for _, tc := range []struct {
		query string
		tls   *v1alpha1.ServerTLS
		want  string
	}{
		{"tls=skip-verify", nil, "option tls=skip-verify is refused: it accepts any server certificate"},
		{"tls=preferred", nil, "option tls=preferred is refused"},
		{"tls=skip-verify", &v1alpha1.ServerTLS{Mode: v1alpha1.TLSVerify}, "option tls=skip-verify is refused"},
		{"tls=skip-verify", unverified, ""},
		{"tls=preferred", unverified, ""},
		{"tls=SKIP-VERIFY&timeout=2s", disable, ""},
		{"tls=preferred&allowFallbackToPlaintext=true", unverified, "option allowFallbackToPlaintext=true is refused"},
		{"allowFallbackToPlaintext=1&tls=preferred", disable, "option allowFallbackToPlaintext=true is refused"},
		{"tls=preferred&allowFallbackToPlaintext=false", unverified, ""},
		{"tls=skip-verify&sql_mode=ANSI", unverified, `option "sql_mode" is refused`},
		{"tls=custom", unverified, "unknown config name"},
	} {
		cfg, err := config.MailboxConfig(base+tc.query, tc.tls)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (%v): refused: %v", tc.query, tc.tls, err)
		case tc.want == "" && (cfg.AllowFallbackToPlaintext || cfg.TLS == nil || !cfg.TLS.InsecureSkipVerify):
			t.Errorf("%s (%v): fallback %v, TLS %+v", tc.query, tc.tls, cfg.AllowFallbackToPlaintext, cfg.TLS)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s (%v): got %v, want %q", tc.query, tc.tls, err, tc.want)
		case err != nil && strings.HasPrefix(tc.want, "option tls=") && !errors.Is(err, config.ErrUnverifiedTLS):
			t.Errorf("%s (%v): %v is not ErrUnverifiedTLS", tc.query, tc.tls, err)
		case err != nil && strings.Contains(err.Error(), dsnMarker[3:]):
			t.Errorf("%s: the error shows the password: %v", tc.query, err)
		}
		// A DSN the driver cannot parse is Open's to name, not the check's.
		if got := config.CheckMailboxDSN(base+tc.query, tc.tls); (got == nil) != (err == nil) && tc.want != "unknown config name" {
			t.Errorf("%s (%v): CheckMailboxDSN %v, MailboxConfig %v", tc.query, tc.tls, got, err)
		}
	}
}

// A config file whose database DSN reaches another host over TLS without
// verification is refused with the field, the setting and the address;
// the opt-in makes it run; verify-full, and loopback, need nothing. The
// mailbox's skip-verify is refused without the opt-in, loopback too.
func TestFileUnverifiedTLSPolicy(t *testing.T) {
	db := func(dsn, extra string) string {
		return strings.Replace(minimal, `"postgres://postgres@127.0.0.1:5432/ff?sslmode=disable"}`, `"`+dsn+`"`+extra+`}`, 1)
	}
	mbx := func(dsn, extra string) string {
		return strings.Replace(minimal, `"root@tcp(127.0.0.1:3306)/mbx", pollInterval: 100ms, batchSize: 200}`,
			`"`+dsn+`", pollInterval: 100ms, batchSize: 200`+extra+`}`, 1)
	}
	for _, tc := range []struct {
		name, doc string
		want      string // "" accepted
	}{
		{"database sslmode=require", db("postgres://postgres:"+dsnMarker+"@db.ops:5432/ff?sslmode=require", ""),
			`database.dsn: Invalid value: "postgres://***@db.ops:5432/ff?sslmode=require": unverified TLS (sslmode=require) to db.ops:5432 is refused`},
		{"read database sslmode=require", strings.Replace(minimal, "sslmode=disable\"}", "sslmode=disable\", readDsn: \"postgres://r@db.ops/ff?sslmode=require\"}", 1),
			`database.readDsn: Invalid value: "postgres://***@db.ops/ff?sslmode=require": unverified TLS (sslmode=require) to db.ops:5432 is refused`},
		{"database sslmode=require opted in", db("postgres://postgres@db.ops:5432/ff?sslmode=require", ", tls: {mode: unverified}"), ""},
		{"database sslmode=prefer opted in to unverified TLS only", db("postgres://postgres@db.ops:5432/ff?sslmode=prefer", ", tls: {mode: unverified}"),
			"plain text to db.ops:5432 is refused"},
		{"database sslmode=verify-full", db("postgres://postgres@db.ops:5432/ff?sslmode=verify-full&channel_binding=require", ""), ""},
		{"database sslmode=verify-ca", db("postgres://postgres@db.ops:5432/ff?sslmode=verify-ca", ""), ""},
		{"database sslmode=require on loopback", db("postgres://postgres@127.0.0.1:5432/ff?sslmode=require", ""), ""},
		{"database mode unverified with a CA", db("postgres://postgres@db.ops:5432/ff?sslmode=require", ", tls: {mode: unverified, ca: x}"),
			`database.tls.mode: Invalid value: "unverified": unverified (no certificate check, as the DSN says) takes no ca`},
		{"mailbox tls=skip-verify", mbx("root:"+dsnMarker+"@tcp(mysql.ops:3306)/mbx?tls=skip-verify", ""),
			`mailbox.dsn: Invalid value: "***@tcp(mysql.ops:3306)/mbx?tls=skip-verify": option tls=skip-verify is refused`},
		{"mailbox tls=skip-verify on loopback", mbx("root@tcp(127.0.0.1:3306)/mbx?tls=skip-verify", ""), "option tls=skip-verify is refused"},
		{"mailbox tls=skip-verify opted in", mbx("root@tcp(mysql.ops:3306)/mbx?tls=skip-verify", ", tls: {mode: unverified}"), ""},
		{"mailbox tls=preferred opted in", mbx("root@tcp(mysql.ops:3306)/mbx?tls=preferred", ", tls: {mode: unverified}"), ""},
		{"mailbox plain text opted in to unverified TLS only", mbx("root@tcp(mysql.ops:3306)/mbx", ", tls: {mode: unverified}"),
			"plain text to mysql.ops:3306 is refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v\n%s", err, tc.doc)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q\n%s", err, tc.want, tc.doc)
			case err != nil && (strings.Contains(err.Error(), dsnMarker[3:]) || strings.Contains(err.Error(), "\n")):
				t.Fatalf("not one line without the password: %q", err)
			}
		})
	}
}

// The resource's mailbox.tls and database.tls: mode unverified is known
// and takes no secretRef or serverName.
func TestServerTLSModeUnverifiedValidation(t *testing.T) {
	feed, err := config.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	spec := feed.Spec
	spec.Mailbox.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified, SecretRef: &v1alpha1.SecretRef{Name: "ca"}}
	spec.Database.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified, ServerName: "db.ops"}
	_, errs := config.ValidateSpec(&spec, nil)
	got := errs.ToAggregate()
	for _, w := range []string{`mailbox.tls.mode: Invalid value: "unverified"`, `database.tls.mode: Invalid value: "unverified"`} {
		if got == nil || !strings.Contains(got.Error(), w) {
			t.Errorf("got %v, want %q", got, w)
		}
	}
	spec.Mailbox.TLS, spec.Database.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified}, &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified}
	if _, errs := config.ValidateSpec(&spec, nil); len(errs) > 0 {
		t.Errorf("refused: %v", errs.ToAggregate())
	}
	if c, err := config.ClientTLS(spec.Database.TLS, config.TLSMaterial{}); c != nil || err != nil {
		t.Errorf("mode unverified makes TLS of FlightFeed's own: %+v, %v", c, err)
	}
}

// A require_auth that lets the client answer a request for the password
// in clear text or as MD5 is named, not taken silently; the default and
// SCRAM-only lists are not.
func TestWeakDatabaseAuth(t *testing.T) {
	for _, tc := range []struct {
		requireAuth string
		want        []string
	}{
		{"", nil},
		{"scram-sha-256", nil},
		{"!password,!md5", nil},
		{"scram-sha-256,md5", []string{"md5"}},
		{"md5", []string{"md5"}},
		{"password", []string{"password"}},
		{"!md5", []string{"password"}},
		{"!scram-sha-256", []string{"password", "md5"}},
		{"!none", []string{"password", "md5"}},
	} {
		dsn := "postgres://u:" + dsnMarker + "@db.ops/ff?sslmode=verify-full"
		if tc.requireAuth != "" {
			dsn += "&require_auth=" + tc.requireAuth
		}
		w := config.DatabaseWeakAuth("database", dsn)
		if !slices.Equal(w.Methods, tc.want) {
			t.Errorf("require_auth=%s: got %q, want %q", tc.requireAuth, w.Methods, tc.want)
		}
		warn := config.WeakAuthWarning([]config.WeakAuth{w})
		switch {
		case tc.want == nil && warn != "":
			t.Errorf("require_auth=%s: warning %q", tc.requireAuth, warn)
		case tc.want != nil && !strings.Contains(warn, "database require_auth="+tc.requireAuth+" permits "+strings.Join(tc.want, " and ")):
			t.Errorf("require_auth=%s: warning %q", tc.requireAuth, warn)
		case strings.Contains(warn, dsnMarker[3:]):
			t.Errorf("warning shows the password: %q", warn)
		}
	}
	// $PGREQUIREAUTH counts when the DSN names none, as pgconn reads it.
	t.Setenv("PGREQUIREAUTH", "md5")
	ws := config.WeakAuthOf(config.Secrets{DatabaseDSN: "postgres://u@db.ops/ff", ReadDatabaseDSN: "postgres://r@db.ops/ff?require_auth=scram-sha-256"})
	if warn := config.WeakAuthWarning(ws); !strings.Contains(warn, "database require_auth=md5 permits md5") || strings.Contains(warn, "read database") {
		t.Errorf("warning %q", warn)
	}
}
