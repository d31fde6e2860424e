package store_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/testpki"
)

// fakePG answers PostgreSQL's SSLRequest with 'S' and completes a TLS
// handshake with its server configuration (then hangs up): a completed
// handshake proves the client trusted the server's CA and sent a client
// certificate it accepted. A connection that starts without SSLRequest is
// counted as plain text.
type fakePG struct {
	ln                        net.Listener
	mu                        sync.Mutex
	tlsDone, tlsFailed, plain int
}

func startFakePG(t *testing.T, cfg *tls.Config) *fakePG {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePG{ln: ln}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { _ = c.Close() }()
				f.serve(c, cfg)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return f
}

func (f *fakePG) serve(c net.Conn, cfg *tls.Config) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var req [8]byte
	if _, err := io.ReadFull(c, req[:]); err != nil {
		return
	}
	if binary.BigEndian.Uint32(req[0:4]) != 8 || binary.BigEndian.Uint32(req[4:8]) != 80877103 {
		f.mu.Lock()
		f.plain++
		f.mu.Unlock()
		return
	}
	if _, err := c.Write([]byte{'S'}); err != nil {
		return
	}
	err := tls.Server(c, cfg).HandshakeContext(context.Background())
	f.mu.Lock()
	if err == nil {
		f.tlsDone++
	} else {
		f.tlsFailed++
	}
	f.mu.Unlock()
}

func (f *fakePG) counts() (done, failed, plain int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tlsDone, f.tlsFailed, f.plain
}

// database.tls: a server certificate signed by the configured private CA
// is accepted (the handshake completes, with the client certificate the
// server requires), whatever the DSN's sslmode says; one signed by another
// CA is refused, and sslmode=prefer does not fall back to plain text.
// Open and the migration path (SchemaVersion) both use it.
func TestDatabaseTLSWithPrivateCA(t *testing.T) {
	server := testpki.New(t, "database CA", "db.test")
	other := testpki.New(t, "another CA", "db.test")
	clientTLS := func(p *testpki.PKI) *tls.Config {
		cfg, err := config.ClientTLS(&v1alpha1.ServerTLS{ServerName: "db.test"},
			config.TLSMaterial{CA: p.CAPEM, Cert: server.ClientCertPEM, Key: server.ClientKeyPEM})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	for _, c := range []struct {
		name    string
		ca      *testpki.PKI
		sslmode string
		ok      bool
	}{
		{"the private CA, sslmode=disable", server, "disable", true},
		{"the private CA, sslmode=prefer", server, "prefer", true},
		{"another CA, sslmode=prefer", other, "prefer", false},
		{"another CA, sslmode=require", other, "require", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := startFakePG(t, server.ServerTLS(t))
			dsn := "postgres://postgres:pw@" + fake.ln.Addr().String() + "/ff?connect_timeout=5&sslmode=" + c.sslmode
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := store.Open(ctx, dsn, store.Options{TLS: clientTLS(c.ca)})
			if err == nil {
				s.Close()
				t.Fatal("the fake server let the store open")
			}
			_, _, merr := store.SchemaVersion(ctx, dsn, store.WithTLS(clientTLS(c.ca)))
			done, failed, plain := fake.counts()
			if plain != 0 {
				t.Fatalf("%d connections fell back to plain text", plain)
			}
			if c.ok && (done != 2 || failed != 0) {
				t.Fatalf("handshakes completed %d, failed %d; want 2 completed (Open: %v; SchemaVersion: %v)", done, failed, err, merr)
			}
			if !c.ok {
				if done != 0 {
					t.Fatalf("%d handshakes completed with a server of another CA", done)
				}
				for _, e := range []error{err, merr} {
					if !strings.Contains(e.Error(), "certificate") {
						t.Errorf("error %v does not name the certificate", e)
					}
				}
			}
		})
	}
}
