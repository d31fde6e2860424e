package serving_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/serving"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/testpki"
)

// A folder shaped like the Secret cert-manager fills for a pump pod
// (tls.crt, tls.key, ca.crt): the endpoint serves its certificate, a client
// verifies it as flightfeed-pump against the CA (and refuses another name
// or no CA), and a renewal written into the folder is served without a
// restart.
func TestTLSServesTheMountedCertificateAndItsRenewal(t *testing.T) {
	dir := t.TempDir()
	write := func(p *testpki.PKI) {
		for name, b := range map[string][]byte{serving.CertName: p.ServerCertPEM, serving.KeyName: p.ServerKeyPEM, "ca.crt": p.CAPEM} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The pump certificate of feed airports/pek names its Service only.
	served := feednames.PumpServiceDNSName(types.NamespacedName{Namespace: "airports", Name: "pek"})
	first := testpki.New(t, "pump-ca", served)
	write(first)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := serving.TLS(ctx, dir, false, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
		ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)} // the refused handshakes are the test's
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()

	get := func(roots *x509.CertPool, serverName string) error {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: serverName},
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
			}}}
		defer c.CloseIdleConnections()
		resp, err := c.Get("https://" + serverName + "/")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	if err := get(first.Pool(), served); err != nil {
		t.Fatalf("verified as %s against the folder's CA: %v", served, err)
	}
	if err := get(first.Pool(), feednames.PumpServiceDNSName(types.NamespacedName{Namespace: "airports", Name: "pvg"})); err == nil {
		t.Fatal("another feed's name, which the certificate does not carry, was accepted")
	}
	if err := get(x509.NewCertPool(), served); err == nil {
		t.Fatal("a client without the CA accepted the certificate")
	}

	// A renewal (here by another CA, so the served one can be told apart).
	renewed := testpki.New(t, "pump-ca-renewed", served)
	write(renewed)
	await.Eventually(t, "the renewed certificate served", 30*time.Second, func() (bool, string) {
		err := get(renewed.Pool(), served)
		return err == nil, fmt.Sprint(err)
	})
}
