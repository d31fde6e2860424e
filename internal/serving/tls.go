// Package serving holds what the operator's and the pump pods' HTTPS
// endpoints share: their TLS (a mounted certificate, reloaded, or a
// self-signed one), HTTP/2 off by default, the check of a bearer token
// through the API server (Access: TokenReview, SubjectAccessReview, cached
// briefly) and the operator's metrics server options, which use it.
package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
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
// the API server — unless insecure asks for plain HTTP. The check is
// Access's, the pump pods' own: controller-runtime's filter for it links
// the API server's library (k8s.io/apiserver, CEL) into the binary every
// pump pod runs.
func MetricsOptions(addr string, insecure bool, certDir string, http2 bool) metricsserver.Options {
	m := metricsserver.Options{BindAddress: addr}
	if insecure {
		return m
	}
	m.SecureServing = true
	m.FilterProvider = metricsAccess
	m.CertDir, m.CertName, m.KeyName = certDir, CertName, KeyName
	if !http2 {
		m.TLSOpts = []func(*tls.Config){DisableHTTP2}
	}
	return m
}

// metricsAccess is the metrics server's filter: RequireToken with an
// Access asking the API server through the metrics server's client.
func metricsAccess(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics: token review client: %w", err)
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics: subject access review client: %w", err)
	}
	access := NewAccess(authn.TokenReviews(), authz.SubjectAccessReviews(), nil)
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return RequireToken(access, log, next), nil
	}, nil
}

// RequireToken serves next only to a request whose "Authorization: Bearer"
// token the API server accepts (TokenReview, for its own audiences) and
// whose user it allows the request's verb on its path as a non-resource
// URL (SubjectAccessReview: get /metrics, as the chart's metrics-reader
// ClusterRole grants): no token or one the API server refuses is 401, a
// user without the permission 403, the API server not answering 503, too
// many new tokens at once 429.
func RequireToken(access *Access, log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		decision, user, err := access.Check(r.Context(), authorizationBearer(r), AccessRequest{
			NonResource: &authorizationv1.NonResourceAttributes{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}})
		switch {
		case errors.Is(err, ErrTooManyReviews):
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("already reviewing %d new tokens a second with the API server; retry after 1 s", ReviewRate), http.StatusTooManyRequests)
		case err != nil:
			log.Error(err, "access check")
			http.Error(w, "cannot check the token with the API server now; try again", http.StatusServiceUnavailable)
		case decision == Unauthenticated:
			w.Header().Set("WWW-Authenticate", `Bearer realm="flightfeed"`)
			http.Error(w, "Unauthorized: no bearer token, or one the API server's TokenReview refused", http.StatusUnauthorized)
		case decision == Forbidden:
			log.V(1).Info("forbidden", "user", user, "path", r.URL.Path)
			http.Error(w, fmt.Sprintf("Authorization denied for user %s (needs a ClusterRole with nonResourceURLs [/metrics], verbs [get])", user),
				http.StatusForbidden)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// authorizationBearer is the token of an "Authorization: Bearer" header,
// "" when there is none.
func authorizationBearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
