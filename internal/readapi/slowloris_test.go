package readapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
)

// looseTimeouts are short, for the tests; loris clients below would
// need far longer than any of them to finish.
var looseTimeouts = Timeouts{ReadHeader: 300 * time.Millisecond, Read: 600 * time.Millisecond, Idle: 600 * time.Millisecond}

// servers starts the read API and the metrics endpoint with tl and
// returns their addresses.
func startServers(t *testing.T, tl Timeouts) map[string]string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	api, metrics := loopback.FreeAddr(t), loopback.FreeAddr(t)
	done := make(chan error, 2)
	go func() {
		done <- (&APIServer{Addr: api, API: testAPI(t, "", 4, nil, nil), Timeouts: tl, Log: logr.Discard()}).Start(ctx)
	}()
	go func() {
		done <- (&MetricsServer{Addr: metrics, Feed: types.NamespacedName{Namespace: testNamespace, Name: testFeed},
			Gatherer: prometheus.NewRegistry(), Access: fakeAccess(), Timeouts: tl, Log: logr.Discard()}).Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("server: %v", err)
			}
		}
	})
	return map[string]string{"read API": api, "metrics": metrics}
}

// dial opens a TLS connection to addr, waiting for the server to listen.
func dial(t *testing.T, addr string) *tls.Conn {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			return conn
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cutOff reports whether the server closed conn: a read that ends with
// EOF or a reset (not the client's own deadline, which only bounds the
// test).
func cutOff(conn net.Conn, within time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

// A slow-loris client — headers sent a byte at a time, never finished —
// is cut off by the read API and by /metrics, long
// before it would have sent them; so is a kept-alive connection left
// idle. Before, the read API and /metrics cut slow headers after 10 s
// (the read API's own ReadHeaderTimeout, the header subtests pass on it
// too) but waited for ever on an idle kept-alive connection and for the
// whole of a slow body.
func TestSlowLorisIsCutOff(t *testing.T) {
	for name, addr := range startServers(t, looseTimeouts) {
		t.Run(name+": headers byte by byte", func(t *testing.T) {
			conn := dial(t, addr)
			defer func() { _ = conn.Close() }()
			// 4,000 bytes at a byte every 20 ms: 80 s, were it not cut.
			msg := "GET /metrics HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Slow: 1\r\n", 400)
			sent := 0
			for ; sent < len(msg); sent++ {
				if _, err := conn.Write([]byte{msg[sent]}); err != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
				if sent%10 == 0 {
					// A server that gave up shows as a closed connection.
					_ = conn.SetReadDeadline(time.Now().Add(time.Millisecond))
					if _, err := conn.Read(make([]byte, 1)); err != nil {
						var ne net.Error
						if !errors.As(err, &ne) || !ne.Timeout() {
							break
						}
					}
				}
			}
			if sent == len(msg) {
				t.Fatalf("the server took all %d bytes of a slow loris", sent)
			}
		})
		t.Run(name+": a body byte by byte", func(t *testing.T) {
			conn := dial(t, addr)
			defer func() { _ = conn.Close() }()
			if _, err := io.WriteString(conn, "POST /api/v1/feeds/airport/pek/replays HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			sent := 0
			for ; sent < 4000; sent++ {
				if _, err := conn.Write([]byte{'x'}); err != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
				_ = conn.SetReadDeadline(time.Now().Add(time.Millisecond))
				if _, err := conn.Read(make([]byte, 1)); err != nil {
					var ne net.Error
					if !errors.As(err, &ne) || !ne.Timeout() {
						break
					}
				}
			}
			// Cut long before half of it (40 s of sending): a server
			// without a read deadline takes it all and closes only then.
			if sent >= 2000 {
				t.Fatalf("the server took %d bytes of a body sent at a byte every 20 ms", sent)
			}
		})
		t.Run(name+": an idle kept-alive connection", func(t *testing.T) {
			conn := dial(t, addr)
			defer func() { _ = conn.Close() }()
			// One request answered, then nothing: the server must not
			// keep the connection for ever.
			if _, err := io.WriteString(conn, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.Close {
				t.Fatal("the server did not keep the connection alive; nothing to test")
			}
			if !cutOff(conn, 30*time.Second) {
				t.Fatal("an idle connection was still open after 30 s")
			}
		})
	}
}
