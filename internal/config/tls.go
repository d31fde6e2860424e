package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// ClientTLS builds the verified client TLS configuration of mailbox.tls or
// database.tls: the material's CA as the only root (the system roots
// without one), its client certificate when given, and spec.ServerName
// (empty: the caller puts the DSN's host). Verification is never skipped.
// nil spec or mode disable or unverified: nil, no TLS of FlightFeed's
// making (the DSN decides). Its errors name what is wrong with the
// material, never the material.
func ClientTLS(spec *v1alpha1.ServerTLS, m TLSMaterial) (*tls.Config, error) {
	if spec == nil || spec.Mode == v1alpha1.TLSDisable || spec.Mode == v1alpha1.TLSUnverified {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: spec.ServerName}
	if len(m.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(m.CA) {
			return nil, errors.New("ca.crt holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	switch {
	case len(m.Cert) > 0 && len(m.Key) > 0:
		pair, err := tls.X509KeyPair(m.Cert, m.Key)
		if err != nil {
			return nil, fmt.Errorf("tls.crt and tls.key are not a certificate and its key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case len(m.Cert) > 0 || len(m.Key) > 0:
		return nil, errors.New("tls.crt and tls.key must be given together")
	}
	return cfg, nil
}

// MailboxTLS is ClientTLS of the feed's mailbox.tls.
func (f *Feed) MailboxTLS() (*tls.Config, error) {
	cfg, err := ClientTLS(f.Spec.Mailbox.TLS, f.Secrets.MailboxTLS)
	if err != nil {
		return nil, fmt.Errorf("mailbox.tls: %w", err)
	}
	return cfg, nil
}

// DatabaseTLS is ClientTLS of the feed's database.tls.
func (f *Feed) DatabaseTLS() (*tls.Config, error) {
	cfg, err := ClientTLS(f.Spec.Database.TLS, f.Secrets.DatabaseTLS)
	if err != nil {
		return nil, fmt.Errorf("database.tls: %w", err)
	}
	return cfg, nil
}
