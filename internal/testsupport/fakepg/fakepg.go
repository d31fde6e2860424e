// Package fakepg is a rogue PostgreSQL server for tests: it refuses TLS
// ('N' to an SSLRequest), reads the startup message and answers it with one
// message whose header claims Size bytes (an authentication request, type
// 'R'), then streams zeros from one small buffer until the client hangs up.
// A client that believes the header holds Size bytes.
package fakepg

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// sslRequestCode is the protocol version field of an SSLRequest.
const sslRequestCode = 80877103

// Server is one fake server on a loopback port.
type Server struct {
	// Size is the body length the answer claims.
	Size int64

	ln   net.Listener
	sent atomic.Int64
	wg   sync.WaitGroup
}

// Start listens on a free loopback port until the test ends.
func Start(t testing.TB, size int64) *Server {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Size: size, ln: ln}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

// Addr is host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Sent is the bytes sent so far of huge messages, headers included.
func (s *Server) Sent() int64 { return s.sent.Load() }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { _ = c.Close() }()
			_ = s.serve(c)
		}()
	}
}

// startup reads one startup message (an int32 length including itself,
// then the body) and returns its protocol code.
func startup(r io.Reader) (uint32, error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, err
	}
	n := int64(binary.BigEndian.Uint32(h[:4])) - 8
	if _, err := io.CopyN(io.Discard, r, max(n, 0)); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(h[4:]), nil
}

// zeros is what the huge message streams.
var zeros = make([]byte, 64<<10)

func (s *Server) serve(c net.Conn) error {
	code, err := startup(c)
	if err != nil {
		return err
	}
	if code == sslRequestCode {
		if _, err := c.Write([]byte{'N'}); err != nil {
			return err
		}
		if _, err := startup(c); err != nil {
			return err
		}
	}
	h := binary.BigEndian.AppendUint32([]byte{'R'}, uint32(s.Size+4)) //nolint:gosec // G115: a test's claimed size, below 4 GiB
	if _, err := c.Write(h); err != nil {
		return err
	}
	s.sent.Add(int64(len(h)))
	for left := s.Size; left > 0; {
		k, err := c.Write(zeros[:min(left, int64(len(zeros)))])
		s.sent.Add(int64(k))
		if err != nil {
			return err
		}
		left -= int64(k)
	}
	return nil
}
