package readapi

import (
	"context"
	"crypto/tls"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/flightfeed/flightfeed/internal/serving"
)

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// logrWriter turns net/http's error log lines into logr messages.
type logrWriter struct {
	log logr.Logger
	// msg is the message of each line ("read api: connection").
	msg string
}

func (w logrWriter) Write(p []byte) (int, error) {
	w.log.Info(w.msg, "error", strings.TrimSpace(string(p)))
	return len(p), nil
}

// APIServer serves a ReadAPI over HTTPS on its own listener; the pump pod
// runs it as a manager Runnable on every replica.
type APIServer struct {
	// Addr is the listen address (":8082").
	Addr string
	// API answers the requests; Start closes it on the way out.
	API *ReadAPI
	// CertDir holds tls.crt and tls.key, reloaded when they change;
	// without them a self-signed certificate is made at start.
	CertDir string
	// HTTP2 offers HTTP/2 (off by default: its stream handling had denial
	// of service flaws).
	HTTP2 bool
	// Timeouts bound reading requests and idle connections (zero: the
	// defaults of Timeouts).
	Timeouts Timeouts
	Log      logr.Logger
}

// NeedLeaderElection is false: every replica serves reads.
func (s *APIServer) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *APIServer) Start(ctx context.Context) error {
	defer s.API.Close()
	tlsCfg, err := serving.TLS(ctx, s.CertDir, s.HTTP2, s.Log)
	if err != nil {
		return fmt.Errorf("read api: %w", err)
	}
	srv := &http.Server{
		Addr:        s.Addr,
		Handler:     s.API.Handler(),
		BaseContext: func(net.Listener) context.Context { return ctx },
		// The default until s.Timeouts.apply sets the configured one.
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		// TLS handshake failures (port scanners, plain HTTP) are the
		// caller's problem: debug level, through the manager's logger.
		ErrorLog: stdlog.New(logrWriter{s.Log.V(1), "read api: connection"}, "", 0),
	}
	s.Timeouts.apply(srv, 2*readTimeout)
	if !s.HTTP2 {
		// A non-nil, empty map: no HTTP/2 even if a client asks for it.
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("read api on %s: %w", s.Addr, err)
	}
	s.Log.Info("serving the read API over HTTPS", "address", ln.Addr().String())
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(tls.NewListener(ln, tlsCfg)) }()
	select {
	case err := <-errs:
		return fmt.Errorf("read api on %s: %w", s.Addr, err)
	case <-ctx.Done():
	}
	// A fresh context on purpose: ctx is done, in-flight reads may finish.
	shutdown, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("read api: shutdown: %w", err)
	}
	return nil
}
