package config_test

import (
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/testsupport/testpki"
)

func indentPEM(pem []byte) string {
	return strings.ReplaceAll(strings.TrimSpace(string(pem)), "\n", "\n      ")
}

// A config file gives mailbox.tls and database.tls as kafka.tls: inline PEM
// and a server name; they land in the spec and the feed's TLS material,
// and make verified client configurations. SASL PLAIN is accepted with
// kafka.tls.
func TestFileServerTLS(t *testing.T) {
	p := testpki.New(t, "private CA", "db.test")
	tlsYAML := func(section string) string {
		return section + ":\n  tls:\n    serverName: " + section + ".test\n    ca: |\n      " + indentPEM(p.CAPEM) +
			"\n    cert: |\n      " + indentPEM(p.ClientCertPEM) + "\n    key: |\n      " + indentPEM(p.ClientKeyPEM) + "\n"
	}
	doc := strings.NewReplacer(
		`mailbox: {dsn: "root@tcp(127.0.0.1:3306)/mbx", pollInterval: 100ms, batchSize: 200}`,
		strings.Replace(tlsYAML("mailbox"), "mailbox:\n", "mailbox:\n  dsn: \"root@tcp(127.0.0.1:3306)/mbx\"\n", 1),
		`database: {dsn: "postgres://postgres@127.0.0.1:5432/ff?sslmode=disable"}`,
		strings.Replace(tlsYAML("database"), "database:\n", "database:\n  dsn: \"postgres://postgres@127.0.0.1:5432/ff?sslmode=verify-full\"\n", 1),
		`topics: {state`, `tls: {}, sasl: {mechanism: PLAIN, username: u, password: p}, topics: {state`,
	).Replace(minimal)
	feed, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	for name, get := range map[string]func() (string, error){
		"mailbox": func() (string, error) {
			c, err := feed.MailboxTLS()
			if c == nil {
				return "", err
			}
			return c.ServerName, err
		},
		"database": func() (string, error) {
			c, err := feed.DatabaseTLS()
			if c == nil || c.RootCAs == nil || len(c.Certificates) != 1 || c.InsecureSkipVerify {
				return "", err
			}
			return c.ServerName, err
		},
	} {
		if sn, err := get(); err != nil || sn != name+".test" {
			t.Errorf("%s TLS: server name %q, %v", name, sn, err)
		}
	}
	if string(feed.Secrets.MailboxTLS.CA) != string(p.CAPEM) || string(feed.Secrets.DatabaseTLS.Key) != string(p.ClientKeyPEM) {
		t.Errorf("TLS material not kept: %+v", feed.Secrets)
	}
	if plain, _ := config.Parse([]byte(minimal)); plain.Spec.Mailbox.TLS != nil || plain.Spec.Database.TLS != nil {
		t.Error("TLS on without being asked for")
	}
}
