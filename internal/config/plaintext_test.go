package config_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
)

// What each DSN sends in plain text beyond loopback, and whether that
// stops the feed: plain text is refused unless every address is loopback
// or the dependency opted in (tls: {mode: disable}); verified TLS of
// FlightFeed's making (a tls without mode: disable) wins over the DSN.
func TestPlaintextDecision(t *testing.T) {
	verify := &v1alpha1.ServerTLS{}
	disable := &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable}
	for _, tc := range []struct {
		name     string
		mailbox  bool
		dsn      string
		tls      *v1alpha1.ServerTLS
		want     []string
		refused  bool
		optedIn  bool
		warnPart string
	}{
		{name: "mailbox on 127.0.0.1", mailbox: true, dsn: "root@tcp(127.0.0.1:3306)/mbx"},
		{name: "mailbox on localhost", mailbox: true, dsn: "root@tcp(localhost:3306)/mbx"},
		{name: "mailbox on ::1", mailbox: true, dsn: "root@tcp([::1]:3306)/mbx"},
		{name: "mailbox on 127.0.0.2", mailbox: true, dsn: "root@tcp(127.0.0.2:3306)/mbx?tls=false"},
		{name: "mailbox on a name that looks local", mailbox: true, dsn: "root@tcp(127.0.0.1.nip.io:3306)/mbx",
			want: []string{"127.0.0.1.nip.io:3306"}, refused: true},
		{name: "mailbox on the network", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx",
			want: []string{"mysql.ops:3306"}, refused: true},
		{name: "mailbox on the network, tls=false", mailbox: true, dsn: "u:p@tcp(10.0.0.5:3306)/mbx?tls=false",
			want: []string{"10.0.0.5:3306"}, refused: true},
		{name: "mailbox tls=true", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx?tls=true"},
		{name: "mailbox.tls wins over tls=false", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx?tls=false", tls: verify},
		{name: "mailbox opted in", mailbox: true, dsn: "u:p@tcp(mysql.ops:3306)/mbx", tls: disable,
			want: []string{"mysql.ops:3306"}, optedIn: true, warnPart: "mailbox mysql.ops:3306"},
		{name: "mailbox opted in, loopback: nothing to warn of", mailbox: true, dsn: "root@tcp(127.0.0.1:3306)/mbx", tls: disable,
			optedIn: true},

		{name: "database on 127.0.0.1, sslmode=disable", dsn: "postgres://postgres@127.0.0.1:5432/ff?sslmode=disable"},
		{name: "database on localhost, sslmode absent", dsn: "postgres://postgres@localhost/ff"},
		{name: "database on a Unix socket", dsn: "host=/var/run/postgresql dbname=ff sslmode=disable"},
		{name: "database on the network, sslmode=disable", dsn: "postgres://u:p@db.ops:5432/ff?sslmode=disable",
			want: []string{"db.ops:5432"}, refused: true},
		{name: "database on the network, sslmode absent (prefer retries in plain text)", dsn: "postgres://u:p@db.ops/ff",
			want: []string{"db.ops:5432"}, refused: true},
		{name: "database sslmode=allow", dsn: "host=db.ops port=6432 user=u dbname=ff sslmode=allow",
			want: []string{"db.ops:6432"}, refused: true},
		{name: "database sslmode=require", dsn: "postgres://u:p@db.ops/ff?sslmode=require"},
		{name: "database sslmode=verify-full", dsn: "postgres://u:p@db.ops/ff?sslmode=verify-full"},
		{name: "database several hosts, one remote", dsn: "postgres://u:p@127.0.0.1:5432,db.ops:5433/ff?sslmode=disable",
			want: []string{"db.ops:5433"}, refused: true},
		{name: "database IPv6 on the network", dsn: "postgres://u:p@[2001:db8::5]:5432/ff?sslmode=disable",
			want: []string{"[2001:db8::5]:5432"}, refused: true},
		{name: "database.tls wins over sslmode=disable", dsn: "postgres://u:p@db.ops/ff?sslmode=disable", tls: verify},
		{name: "database opted in", dsn: "postgres://u:p@db.ops/ff?sslmode=disable", tls: disable,
			want: []string{"db.ops:5432"}, optedIn: true, warnPart: "database db.ops:5432"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p config.Plaintext
			if tc.mailbox {
				p = config.MailboxPlaintext(tc.dsn, tc.tls)
			} else {
				p = config.DatabasePlaintext("database", tc.dsn, tc.tls)
			}
			if !slices.Equal(p.Addresses, tc.want) || p.Refused() != tc.refused || p.OptedIn != tc.optedIn {
				t.Fatalf("got %+v (refused %v), want addresses %q, refused %v, opted in %v", p, p.Refused(), tc.want, tc.refused, tc.optedIn)
			}
			err := p.Err()
			if (err != nil) != tc.refused {
				t.Fatalf("Err() = %v, refused %v", err, tc.refused)
			}
			if err != nil {
				for _, w := range append(slices.Clone(tc.want), "is refused", "{mode: disable}") {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				if strings.Contains(err.Error(), ":p@") {
					t.Errorf("error shows the password: %q", err)
				}
			}
			warn := config.PlaintextWarning([]config.Plaintext{p})
			if tc.warnPart == "" && warn != "" || !strings.Contains(warn, tc.warnPart) {
				t.Errorf("warning %q, want one saying %q", warn, tc.warnPart)
			}
		})
	}
}

// A config file that reaches the mailbox or the database in plain text
// beyond loopback is refused with the field and the address; the opt-in
// makes it run; docs/configuration.md's minimal file (127.0.0.1, sslmode=disable) keeps
// working without it. mode disable with TLS material, or on kafka.tls, is
// a mistake and refused.
func TestFilePlaintextPolicy(t *testing.T) {
	remoteMailbox := strings.Replace(minimal, "tcp(127.0.0.1:3306)", "tcp(mysql.ops:3306)", 1)
	remoteDatabase := strings.Replace(minimal, "@127.0.0.1:5432/ff?sslmode=disable", "@db.ops:5432/ff?sslmode=prefer", 1)
	for _, tc := range []struct {
		name, doc string
		want      string // "" accepted
	}{
		{"minimal, loopback", minimal, ""},
		{"mailbox on the network", remoteMailbox,
			`mailbox.dsn: Invalid value: "***@tcp(mysql.ops:3306)/mbx": plain text to mysql.ops:3306 is refused`},
		{"mailbox opted in", strings.Replace(remoteMailbox, "batchSize: 200}", "batchSize: 200, tls: {mode: disable}}", 1), ""},
		{"database on the network", remoteDatabase,
			`database.dsn: Invalid value: "postgres://***@db.ops:5432/ff?sslmode=prefer": plain text to db.ops:5432 is refused`},
		{"database opted in", strings.Replace(remoteDatabase, "sslmode=prefer\"}", "sslmode=prefer\", tls: {mode: disable}}", 1), ""},
		{"read database on the network", strings.Replace(minimal, "sslmode=disable\"}", "sslmode=disable\", readDsn: \"postgres://r@db.ops/ff\"}", 1),
			`database.readDsn: Invalid value: "postgres://***@db.ops/ff": plain text to db.ops:5432 is refused`},
		{"mode disable with a CA", strings.Replace(remoteMailbox, "batchSize: 200}", "batchSize: 200, tls: {mode: disable, ca: x}}", 1),
			"mailbox.tls.mode: Invalid value: \"disable\": disable (plain text) takes no ca"},
		{"unknown mode", strings.Replace(minimal, "batchSize: 200}", "batchSize: 200, tls: {mode: prefer}}", 1),
			`mailbox.tls.mode: Unsupported value: "prefer"`},
		{"kafka.tls mode", strings.Replace(minimal, "topics: {state", "tls: {mode: disable}, topics: {state", 1),
			"kafka.tls.mode: Forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v\n%s", err, tc.doc)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q\n%s", err, tc.want, tc.doc)
			}
		})
	}
}

// The resource's mailbox.tls and database.tls: mode disable takes no
// secretRef or serverName.
func TestServerTLSModeValidation(t *testing.T) {
	feed, err := config.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	spec := feed.Spec
	spec.Mailbox.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable, SecretRef: &v1alpha1.SecretRef{Name: "ca"}}
	spec.Database.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable, ServerName: "db.ops"}
	_, errs := config.ValidateSpec(&spec, field.NewPath("spec"))
	got := errs.ToAggregate()
	for _, w := range []string{`spec.mailbox.tls.mode: Invalid value: "disable"`, `spec.database.tls.mode: Invalid value: "disable"`} {
		if got == nil || !strings.Contains(got.Error(), w) {
			t.Errorf("got %v, want %q", got, w)
		}
	}
	spec.Mailbox.TLS, spec.Database.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable}, &v1alpha1.ServerTLS{Mode: v1alpha1.TLSVerify, ServerName: "db.ops"}
	if _, errs := config.ValidateSpec(&spec, field.NewPath("spec")); len(errs) > 0 {
		t.Errorf("refused: %v", errs.ToAggregate())
	}
}
