// Package fakemysql is a rogue MySQL server for tests: it speaks just enough
// of the client/server protocol for go-sql-driver/mysql to connect (a v10
// handshake, OK for any authentication, OK for COM_PING) and answers every
// query with a LOCAL INFILE request (0xFB) naming a file, recording every
// byte the client sends back. With TLS set it offers CLIENT_SSL and
// upgrades a client that asks, recording whether the TLS handshake
// completed. With Flood it sends, in place of its greeting or of its
// answer to a query, one packet that claims far more than any mailbox
// row (Flood).
package fakemysql

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Capability flags (MySQL client/server protocol).
const (
	capLongPassword  = 1 << 0
	capLongFlag      = 1 << 2
	capConnectWithDB = 1 << 3
	capLocalFiles    = 1 << 7
	capProtocol41    = 1 << 9
	capSSL           = 1 << 11
	capTransactions  = 1 << 13
	capSecureConn    = 1 << 15
	capPluginAuth    = 1 << 19
)

// Server is one fake server on a loopback port.
type Server struct {
	// InfileName is the file the server asks for in answer to a query.
	InfileName string
	// TLS, when set, makes the server offer TLS and upgrade on request.
	TLS *tls.Config

	ln net.Listener
	mu sync.Mutex
	// conns counts accepted connections.
	conns int
	// infileRequests counts the 0xFB requests sent.
	infileRequests int
	// afterInfile holds every payload byte received after a 0xFB request
	// up to and including the terminating empty packet.
	afterInfile []byte
	// emptyTerminators counts the empty packets that ended an upload.
	emptyTerminators int
	// tlsDone counts completed TLS handshakes, tlsErrs the failed ones.
	tlsDone int
	tlsErrs []error
	wg      sync.WaitGroup
	// flood is the huge packet to send (Flood); flooded counts its bytes
	// sent, headers included.
	flood   flood
	flooded atomic.Int64
}

// Stage is where a flood replaces the server's normal packet.
type Stage int

const (
	// AtGreeting floods in place of the server's first packet, before any
	// authentication.
	AtGreeting Stage = iota
	// AtQuery floods in place of the answer to every COM_QUERY (after authentication, and
	// after the TLS upgrade when there is one).
	AtQuery
)

type flood struct {
	size int64
	at   Stage
}

// Option changes a fake server.
type Option func(*Server)

// Flood makes the server send, at the given stage, one packet claiming size
// bytes: fragments of 16 MiB - 1 each announcing the next, as MySQL splits
// a large packet, streamed from one zeroed buffer (the fake itself holds
// almost nothing) until the packet is complete or the client hangs up. A
// client that reassembles it would hold size bytes.
func Flood(size int64, at Stage) Option {
	return func(s *Server) { s.flood = flood{size: size, at: at} }
}

// Start listens on a free loopback port until the test ends.
func Start(t testing.TB, infileName string, tlsConfig *tls.Config, opts ...Option) *Server {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{InfileName: infileName, TLS: tlsConfig, ln: ln}
	for _, o := range opts {
		o(s)
	}
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

// Stats is what the server saw.
type Stats struct {
	Conns, InfileRequests, EmptyTerminators, TLSDone int
	AfterInfile                                      []byte
	TLSErrors                                        []error
	// Flooded is the bytes of flood packets sent (Flood), summed over
	// connections.
	Flooded int64
}

// Stats returns a copy of what the server saw so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Conns: s.conns, InfileRequests: s.infileRequests, EmptyTerminators: s.emptyTerminators,
		TLSDone: s.tlsDone, AfterInfile: bytes.Clone(s.afterInfile), TLSErrors: append([]error(nil), s.tlsErrs...),
		Flooded: s.flooded.Load()}
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns++
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { _ = c.Close() }()
			_ = s.serve(c)
		}()
	}
}

type conn struct {
	rw  io.ReadWriter
	seq byte
}

func (c *conn) read() ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(c.rw, h[:]); err != nil {
		return nil, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	c.seq = h[3] + 1
	p := make([]byte, n)
	_, err := io.ReadFull(c.rw, p)
	return p, err
}

func (c *conn) write(p []byte) error {
	// A 3-byte little-endian length (a test packet is far below 16 MiB)
	// and the sequence number.
	h := binary.LittleEndian.AppendUint32(nil, uint32(len(p)&0xffffff))[:3]
	h = append(h, c.seq)
	c.seq++
	_, err := c.rw.Write(append(h, p...))
	return err
}

var okPacket = []byte{0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00}

// maxFragment is the longest fragment of a packet; one this long is
// continued by the next (a packet of an exact multiple ends with an empty
// one).
const maxFragment = 1<<24 - 1

// zeros is what a flood streams.
var zeros = make([]byte, 64<<10)

// sendFlood sends the flood packet until it is complete or a write fails.
func (s *Server) sendFlood(c *conn) error {
	left := s.flood.size
	for {
		n := min(left, maxFragment)
		h := []byte{byte(n), byte(n >> 8), byte(n >> 16), c.seq} //nolint:gosec // G115: the 3-byte little-endian length, n ≤ 0xffffff
		c.seq++
		if _, err := c.rw.Write(h); err != nil {
			return err
		}
		s.flooded.Add(int64(len(h)))
		left -= n
		for rest := n; rest > 0; {
			k, err := c.rw.Write(zeros[:min(rest, int64(len(zeros)))])
			s.flooded.Add(int64(k))
			if err != nil {
				return err
			}
			rest -= int64(k)
		}
		// A shorter fragment ends the packet.
		if n < maxFragment {
			return nil
		}
	}
}

func (s *Server) serve(nc net.Conn) error {
	c := &conn{rw: nc}
	caps := uint32(capLongPassword | capLongFlag | capConnectWithDB | capLocalFiles | capProtocol41 |
		capTransactions | capSecureConn | capPluginAuth)
	if s.TLS != nil {
		caps |= capSSL
	}
	hs := []byte{10}
	hs = append(hs, "5.7.99-fake\x00"...)
	hs = binary.LittleEndian.AppendUint32(hs, 1)
	hs = append(hs, "abcdefgh"...) // auth data, part 1
	hs = append(hs, 0)
	hs = binary.LittleEndian.AppendUint16(hs, uint16(caps&0xffff))
	hs = append(hs, 45) // utf8mb4_general_ci
	hs = binary.LittleEndian.AppendUint16(hs, 2)
	hs = binary.LittleEndian.AppendUint16(hs, uint16(caps>>16))
	hs = append(hs, 21)
	hs = append(hs, make([]byte, 10)...)
	hs = append(hs, "ijklmnopqrst\x00"...) // auth data, part 2
	hs = append(hs, "mysql_native_password\x00"...)
	if s.flood.size > 0 && s.flood.at == AtGreeting {
		return s.sendFlood(c)
	}
	if err := c.write(hs); err != nil {
		return err
	}
	resp, err := c.read()
	if err != nil {
		return err
	}
	if len(resp) >= 4 && binary.LittleEndian.Uint32(resp)&capSSL != 0 && len(resp) == 32 {
		if s.TLS == nil {
			return errors.New("client asked for TLS that was not offered")
		}
		tc := tls.Server(nc, s.TLS)
		err := tc.HandshakeContext(context.Background())
		s.mu.Lock()
		if err != nil {
			s.tlsErrs = append(s.tlsErrs, err)
		} else {
			s.tlsDone++
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
		c.rw = tc
		if _, err := c.read(); err != nil {
			return err
		}
	}
	if err := c.write(okPacket); err != nil {
		return err
	}
	for {
		p, err := c.read()
		if err != nil || len(p) == 0 {
			return err
		}
		switch p[0] {
		case 0x01: // COM_QUIT
			return nil
		case 0x0e: // COM_PING
			if err := c.write(okPacket); err != nil {
				return err
			}
		case 0x03: // COM_QUERY
			if s.flood.size > 0 && s.flood.at == AtQuery {
				if err := s.sendFlood(c); err != nil {
					return err
				}
				continue
			}
			s.mu.Lock()
			s.infileRequests++
			s.mu.Unlock()
			if err := c.write(append([]byte{0xfb}, s.InfileName...)); err != nil {
				return err
			}
			for {
				p, err := c.read()
				if err != nil {
					return err
				}
				s.mu.Lock()
				s.afterInfile = append(s.afterInfile, p...)
				if len(p) == 0 {
					s.emptyTerminators++
				}
				s.mu.Unlock()
				if len(p) == 0 {
					break
				}
			}
			if err := c.write(okPacket); err != nil {
				return err
			}
		default:
			errPacket := append([]byte{0xff, 0x28, 0x04}, "#HY000not supported by the fake"...)
			if err := c.write(errPacket); err != nil {
				return err
			}
		}
	}
}
