// Package loopback finds free loopback TCP addresses for the servers a
// test starts (probes, metrics, the read API, a broker). The port is free
// when returned; as with any such helper another process may take it
// before the test listens on it. Serve runs a fake server of the test's
// own on such an address.
package loopback

import (
	"context"
	"net"
	"sync"
	"testing"
)

// FreeAddr returns a 127.0.0.1:port address nobody listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// FreePort returns a loopback TCP port nobody listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func listen() (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
}

// Serve listens on a free loopback port and calls handle on its own
// goroutine for every connection, closing it when handle returns; the
// listener closes, and Serve waits for every handle, when t ends.
func Serve(t testing.TB, handle func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			wg.Go(func() {
				defer func() { _ = c.Close() }()
				handle(c)
			})
		}
	})
	return ln
}
