// Package testpki makes a private CA in a test: a server certificate for
// one DNS name, a client certificate, and the server's TLS configuration
// that requires that client certificate (mutual TLS).
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// PKI is one private CA and what it signed.
type PKI struct {
	// CAPEM is the CA certificate (ca.crt).
	CAPEM []byte
	// ServerCertPEM and ServerKeyPEM are the server's pair.
	ServerCertPEM, ServerKeyPEM []byte
	// ClientCertPEM and ClientKeyPEM are the client's pair (tls.crt, tls.key).
	ClientCertPEM, ClientKeyPEM []byte
	pool                        *x509.CertPool
}

// New makes a CA named cn whose server certificate names serverName only.
func New(t testing.TB, cn, serverName string) *PKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, dns []string) ([]byte, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: dns}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	}
	p := &PKI{CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.ServerCertPEM, p.ServerKeyPEM = leaf(2, serverName, x509.ExtKeyUsageServerAuth, []string{serverName})
	p.ClientCertPEM, p.ClientKeyPEM = leaf(3, "flightfeed", x509.ExtKeyUsageClientAuth, nil)
	return p
}

// Pool holds the CA certificate, for a client's RootCAs.
func (p *PKI) Pool() *x509.CertPool { return p.pool }

// ServerTLS is the server's configuration: its certificate, and a client
// certificate signed by this CA required.
func (p *PKI) ServerTLS(t testing.TB) *tls.Config {
	t.Helper()
	pair, err := tls.X509KeyPair(p.ServerCertPEM, p.ServerKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.pool}
}
