package readapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/serving"
)

// Timeouts of the pump pod's HTTP servers (the read API and /metrics):
// a client that sends its request slowly (a slow loris, byte by byte) is
// cut off instead of holding a connection and a goroutine for ever.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers (default
	// DefaultReadHeaderTimeout).
	ReadHeader time.Duration
	// Read bounds reading a whole request, body included (default
	// DefaultReadTimeout): the handlers read at most a small JSON body.
	Read time.Duration
	// Idle bounds how long a kept-alive connection waits for its next
	// request (default DefaultIdleTimeout).
	Idle time.Duration
}

// Defaults of Timeouts.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	// metricsWriteTimeout bounds writing one scrape's answer.
	metricsWriteTimeout = time.Minute
)

// WithDefaults fills unset timeouts.
func (t Timeouts) WithDefaults() Timeouts {
	t.ReadHeader = durationOr(t.ReadHeader, DefaultReadHeaderTimeout)
	t.Read = durationOr(t.Read, DefaultReadTimeout)
	t.Idle = durationOr(t.Idle, DefaultIdleTimeout)
	return t
}

// apply sets the timeouts on srv (write: the handler's own bound).
func (t Timeouts) apply(srv *http.Server, write time.Duration) {
	t = t.WithDefaults()
	srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout, srv.WriteTimeout = t.ReadHeader, t.Read, t.Idle, write
}

// MetricsServer serves the pump pod's /metrics: over HTTPS to bearer
// tokens made for the feed's audience whose user may get the non-resource
// URL /metrics (the same Access as the read API: TokenReview with the
// feed's audience, SubjectAccessReview, its cache and its limit of new
// tokens, past which a scrape gets 429), or over plain HTTP to anyone
// when Insecure (local runs). It replaces controller-runtime's metrics
// server and its authentication filter, which took any token the API
// server accepted, whatever its audience. The pump pod runs it as a
// manager Runnable on every replica.
type MetricsServer struct {
	// Addr is the listen address (":8080").
	Addr string
	// Feed names the audience a scraper's token must be made for.
	Feed types.NamespacedName
	// Insecure serves plain HTTP to anyone (local runs only).
	Insecure bool
	// CertDir holds tls.crt and tls.key, reloaded when they change;
	// without them a self-signed certificate is made at start.
	CertDir string
	// HTTP2 offers HTTP/2 over HTTPS.
	HTTP2 bool
	// Gatherer is the registry served.
	Gatherer prometheus.Gatherer
	// Access checks the scraper's token (shared with the read API).
	Access *Access
	// Timeouts bound reading requests and idle connections (zero: the
	// defaults of Timeouts).
	Timeouts Timeouts
	Log      logr.Logger
}

// NeedLeaderElection is false: every replica serves its metrics.
func (s *MetricsServer) NeedLeaderElection() bool { return false }

// handler is /metrics behind the token check.
func (s *MetricsServer) handler() http.Handler {
	metrics := promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{ErrorLog: stdlog.New(logrWriter{s.Log, "metrics: gathering"}, "", 0)})
	mux := http.NewServeMux()
	if s.Insecure {
		mux.Handle("GET /metrics", metrics)
		return mux
	}
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		decision, user, err := s.Access.Check(r.Context(), BearerToken(r), ScrapeMetrics, s.Feed)
		switch {
		case errors.Is(err, ErrTooManyReviews):
			w.Header().Set("Retry-After", busyRetryAfter)
			http.Error(w, fmt.Sprintf("this pod already reviews %d new tokens a second with the API server; retry after %s s",
				ReviewRate, busyRetryAfter), http.StatusTooManyRequests)
		case err != nil:
			s.Log.Error(err, "metrics: access check")
			http.Error(w, "cannot check the token with the API server now; try again", http.StatusServiceUnavailable)
		case decision == Unauthenticated:
			w.Header().Set("WWW-Authenticate", `Bearer realm="flightfeed"`)
			http.Error(w, fmt.Sprintf("the bearer token is not valid for this feed's metrics: the API server's TokenReview refused it for audience %q",
				feednames.Audience(s.Feed)), http.StatusUnauthorized)
		case decision == Forbidden:
			s.Log.V(1).Info("metrics: forbidden", "user", user)
			http.Error(w, fmt.Sprintf("%s may not %s (needs a ClusterRole with nonResourceURLs [/metrics], verbs [get])", user, ScrapeMetrics),
				http.StatusForbidden)
		default:
			metrics.ServeHTTP(w, r)
		}
	})
	return mux
}

// Start serves until ctx ends.
func (s *MetricsServer) Start(ctx context.Context) error {
	srv := &http.Server{
		Addr:        s.Addr,
		Handler:     s.handler(),
		BaseContext: func(net.Listener) context.Context { return ctx },
		// The default until s.Timeouts.apply sets the configured one.
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ErrorLog:          stdlog.New(logrWriter{s.Log.V(1), "metrics: connection"}, "", 0),
	}
	s.Timeouts.apply(srv, metricsWriteTimeout)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("metrics on %s: %w", s.Addr, err)
	}
	scheme := "HTTP"
	if !s.Insecure {
		tlsCfg, err := serving.TLS(ctx, s.CertDir, s.HTTP2, s.Log)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("metrics: %w", err)
		}
		if !s.HTTP2 {
			srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		}
		ln, scheme = tls.NewListener(ln, tlsCfg), "HTTPS"
	}
	s.Log.Info("serving metrics over "+scheme, "address", ln.Addr().String(), "audience", feednames.Audience(s.Feed))
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	select {
	case err := <-errs:
		return fmt.Errorf("metrics on %s: %w", s.Addr, err)
	case <-ctx.Done():
	}
	// A fresh context on purpose: ctx is done, a scrape in flight may end.
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("metrics: shutdown: %w", err)
	}
	return nil
}
