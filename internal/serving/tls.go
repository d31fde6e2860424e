// Package serving holds what the operator's and the pump pods' HTTPS
// endpoints share: their TLS (a mounted certificate, reloaded, or a
// self-signed one), HTTP/2 off by default, and controller-runtime's
// authenticated metrics server options.
package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Names of the certificate and key in a mounted certificate folder (those
// of a kubernetes.io/tls Secret, e.g. one cert-manager issues).
const (
	CertName = "tls.crt"
	KeyName  = "tls.key"
)

// DisableHTTP2 offers HTTP/1.1 only: HTTP/2's stream handling had denial of
// service flaws (CVE-2023-44487, CVE-2023-39325) and neither endpoint needs
// it. kubebuilder's scaffold does the same.
func DisableHTTP2(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }

// TLS is the TLS configuration of an endpoint: the certificate and
// key in certDir when both are there, reloaded whenever they change
// (certwatcher, until ctx ends); otherwise a self-signed certificate made
// now, in memory (the root filesystem is read-only), as controller-runtime's
// secure metrics server does. The self-signed certificate names localhost
// and 127.0.0.1: clients verify it with --cacert of its own PEM only when
// they connect by those names; otherwise they skip verification (-k) and
// rely on the token for authentication.
func TLS(ctx context.Context, certDir string, http2 bool, log logr.Logger) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if !http2 {
		DisableHTTP2(cfg)
	}
	if certDir != "" {
		certPath, keyPath := filepath.Join(certDir, CertName), filepath.Join(certDir, KeyName)
		certOK, err := exists(certPath)
		if err != nil {
			return nil, err
		}
		keyOK, err := exists(keyPath)
		if err != nil {
			return nil, err
		}
		if certOK != keyOK {
			return nil, fmt.Errorf("certificate folder %s: %s and %s must both be there, or neither", certDir, CertName, KeyName)
		}
		if certOK {
			w, err := certwatcher.New(certPath, keyPath)
			if err != nil {
				return nil, fmt.Errorf("certificate folder %s: %w", certDir, err)
			}
			go func() {
				if err := w.Start(ctx); err != nil {
					log.Error(err, "certificate watcher stopped", "certDir", certDir)
				}
			}()
			cfg.GetCertificate = w.GetCertificate
			log.Info("serving the certificate of the folder, reloaded when it changes", "certDir", certDir)
			return cfg, nil
		}
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{{127, 0, 0, 1}}, nil, "")
	if err != nil {
		return nil, fmt.Errorf("generate a self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	log.Info("serving a self-signed certificate made at start (mount one to serve your own)", "certDir", certDir)
	return cfg, nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("certificate: %w", err)
	}
	return true, nil
}

// MetricsOptions serve /metrics the way kubebuilder's scaffold does: HTTPS
// (a mounted certificate, reloaded, or a self-signed one), HTTP/2 off, and
// every request authenticated (TokenReview) and authorized
// (SubjectAccessReview for `get` on the non-resource URL /metrics) through
// the API server — unless insecure asks for plain HTTP.
func MetricsOptions(addr string, insecure bool, certDir string, http2 bool) metricsserver.Options {
	m := metricsserver.Options{BindAddress: addr}
	if insecure {
		return m
	}
	m.SecureServing = true
	m.FilterProvider = filters.WithAuthenticationAndAuthorization
	m.CertDir, m.CertName, m.KeyName = certDir, CertName, KeyName
	if !http2 {
		m.TLSOpts = []func(*tls.Config){DisableHTTP2}
	}
	return m
}
