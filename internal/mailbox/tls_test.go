package mailbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/testsupport/fakemysql"
	"github.com/flightfeed/flightfeed/internal/testsupport/testpki"
)

// mailbox.tls: a server certificate signed by the configured private CA is
// accepted (the fake server upgrades to TLS, requires the client
// certificate, and the mailbox opens), even where the DSN says tls=false;
// one signed by another CA is refused before any authentication.
func TestMailboxTLSWithPrivateCA(t *testing.T) {
	server := testpki.New(t, "mailbox CA", "mailbox.test")
	other := testpki.New(t, "another CA", "mailbox.test")
	var spec v1alpha1.FlightFeedSpec
	config.SetDefaults(&spec)
	for _, c := range []struct {
		name string
		ca   *testpki.PKI
		dsn  string
		ok   bool
	}{
		{"the private CA", server, "?timeout=5s", true},
		{"the private CA, the DSN saying tls=false", server, "?timeout=5s&tls=false", true},
		{"another CA", other, "?timeout=5s", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := fakemysql.Start(t, "/nonexistent", server.ServerTLS(t))
			feed := &config.Feed{Spec: spec}
			feed.Spec.Mailbox.TLS = &v1alpha1.ServerTLS{ServerName: "mailbox.test"}
			feed.Secrets.MailboxDSN = "root:pw@tcp(" + srv.Addr() + ")/mbx" + c.dsn
			feed.Secrets.MailboxTLS = config.TLSMaterial{CA: c.ca.CAPEM, Cert: server.ClientCertPEM, Key: server.ClientKeyPEM}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			m, err := mailbox.OpenFeed(ctx, feed)
			if err == nil {
				_ = m.Close()
			}
			st := srv.Stats()
			switch {
			case c.ok && (err != nil || st.TLSDone == 0 || len(st.TLSErrors) != 0):
				t.Fatalf("open: %v; TLS handshakes %d, failed %v", err, st.TLSDone, st.TLSErrors)
			case !c.ok && (err == nil || st.TLSDone != 0 || !strings.Contains(err.Error(), "certificate")):
				t.Fatalf("open: %v; TLS handshakes %d completed with a server of another CA", err, st.TLSDone)
			}
		})
	}
}
