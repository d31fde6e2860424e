package mailbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/go-sql-driver/mysql"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
)

// Bounded reads ("bounded per feed"). go-sql-driver/mysql joins
// the fragments of a packet (16 MiB - 1 each, a full one announcing the
// next) without any bound of its own, so a mailbox server that announces
// a packet of gigabytes would have the pump allocate until the pod is
// killed. Every mailbox connection is dialled through boundConn, which
// reads the packet headers as they pass and fails the connection, with an
// error naming the mailbox and the limit, as soon as one packet claims
// more than the feed can legitimately be sent: before the driver reserves
// the fragment that would cross it.
//
// The largest legitimate packet from the server is one row of the bodies
// query: a body of at most mailbox.maxMessageBytes (Head cuts bodies at
// the caller's maxBytes, which the pump sets to that, with SUBSTRING) and a
// few small columns; a row of the head query carries a body of at most
// budget/limit bytes, no more than maxBytes. Everything else the mailbox reads (ids, sizes, the
// information_schema lookups, the AODB side's outbound RQFDs of about a
// kilobyte) is far smaller.
//
// TLS and compression hide the packet headers: the driver puts TLS (or
// zlib) above the connection it dialled, so this layer sees ciphertext,
// and there is no hook above it (the driver builds its tls.Conn itself).
// Those connections are bounded instead by the bytes the server sends in
// answer to one command: the bytes read since the client last wrote. The
// driver never writes in the middle of reading an answer, so any one
// packet is at most that. The largest legitimate answer is a batch of
// bodies: at most mailbox.maxBatchBytes of them, or a single body of up to
// mailbox.maxMessageBytes (Head), plus per-row overhead. One write does
// not start a new answer: a TLS 1.3 KeyUpdate the server asks for makes
// crypto/tls write 27 bytes in the middle of a read, which would otherwise
// let a server reset the count as often as it likes; so writes of at most
// that size (also a COM_PING or COM_QUIT under TLS 1.3, whose answers are
// a few bytes) count as part of the current answer.
//
// The connection's first write tells which case applies: it is the
// client's answer to the server's greeting, and its capability flags say
// whether TLS or compression follows.

// BoundMargin is what the packet bound adds to mailbox.maxMessageBytes:
// the other columns of a body row and the packet headers need a few dozen
// bytes; the rest is slack.
const BoundMargin = 1 << 20

// Capability flags of the client's handshake response.
const (
	clientCompress = 1 << 5
	clientSSL      = 1 << 11
)

// maxFragment is the length of a fragment that is continued by the next.
const maxFragment = 1<<24 - 1

// keyUpdateWrite is the size of a TLS 1.3 KeyUpdate record: a 5-byte
// record header, the 4-byte handshake header and 1-byte request, the inner
// content type and a 16-byte AEAD tag (all TLS 1.3 suites).
const keyUpdateWrite = 5 + 4 + 1 + 1 + 16

// bound holds one mailbox's limits and the last limit a connection hit.
type bound struct {
	// packet bounds one packet (its fragments summed) in plain text.
	packet int64
	// answer bounds the bytes of one answer under TLS or compression.
	answer int64
	// maxMessage and maxBatch are the settings the bounds came from.
	maxMessage, maxBatch int64
	// hit is the last bound a connection hit, until an error takes it.
	hit atomic.Pointer[BoundError]
}

// newBound derives the bounds from the feed's mailbox settings; zero ones
// (a spec not defaulted) count as their defaults.
func newBound(spec v1alpha1.MailboxSpec) *bound {
	msg, batch, rows := spec.MaxMessageBytes, spec.MaxBatchBytes, int64(spec.BatchSize)
	if msg <= 0 {
		msg = config.DefaultMaxMessageBytes
	}
	if batch <= 0 {
		batch = config.DefaultMaxBatchBytes
	}
	if rows <= 0 {
		rows = config.DefaultBatchSize
	}
	answer := max(msg, batch)
	// A head read returns up to a batch of rows, their bodies within the
	// budget of mailbox.maxBatchBytes (Head) and their other columns well
	// under 256 bytes each (twice that is counted, for margin); TLS adds at
	// most 29 bytes to a record of 16 KiB, compression 7 to a packet of
	// 16 MiB, both under 1/64.
	answer += answer/64 + 2*rows*256 + BoundMargin
	return &bound{packet: msg + BoundMargin, answer: answer, maxMessage: msg, maxBatch: batch}
}

// ConnReadBound is the most one mailbox connection of a feed with spec
// may read for one answer: the larger of its packet bound and its answer
// bound (the pod's memory budget counts it per connection).
func ConnReadBound(spec v1alpha1.MailboxSpec) int64 {
	b := newBound(spec)
	return max(b.packet, b.answer)
}

// MaxConns is the size of a feed's mailbox connection pool.
const MaxConns = 4

// BoundError is a mailbox connection's bound crossed by the server.
type BoundError struct {
	// Limit is the bound crossed; Answer is set when it bounds a whole
	// answer (TLS or compression), not one packet.
	Limit  int64
	Answer bool
	// MaxMessageBytes and MaxBatchBytes are the settings it came from.
	MaxMessageBytes, MaxBatchBytes int64
}

func (e *BoundError) Error() string {
	if e.Answer {
		return fmt.Sprintf("mailbox: server sent more than %d bytes in answer to one command (limit over TLS or compression, "+
			"where packets are not visible: the larger of mailbox.maxMessageBytes %d and mailbox.maxBatchBytes %d, plus margins)",
			e.Limit, e.MaxMessageBytes, e.MaxBatchBytes)
	}
	return fmt.Sprintf("mailbox: server sent a packet of more than %d bytes (limit: mailbox.maxMessageBytes %d + %d bytes)",
		e.Limit, e.MaxMessageBytes, BoundMargin)
}

// dial is the mailbox connector's DialFunc: the driver's own dialling
// (net.Dialer, whose keepalives are on by default) under boundConn.
func (b *bound) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &boundConn{Conn: nc, b: b, framed: true}, nil
}

// explain names the bound a connection hit in err, the driver's
// ErrInvalidConn: the driver logs what a read returned and gives its
// caller only "invalid connection".
func (b *bound) explain(err error) error {
	if b == nil || !errors.Is(err, mysql.ErrInvalidConn) {
		return err
	}
	if hit := b.hit.Swap(nil); hit != nil {
		return fmt.Errorf("%w (%w)", hit, err)
	}
	return err
}

// boundConn is one mailbox connection under its bound (see above).
type boundConn struct {
	net.Conn
	b *bound
	// framed: the reads are plain-text packets, parsed as they pass.
	framed bool
	// greeted: the client's first write (its handshake response) was seen.
	greeted bool
	// hdr holds nhdr bytes of a packet header split between reads.
	hdr  [4]byte
	nhdr int
	// left is what remains of the current fragment's body; size the length
	// of the current packet so far (its fragments summed); more is set
	// when the current fragment is continued by the next.
	left, size int64
	more       bool
	// answer counts the bytes read since the last command was written.
	answer int64
	// err is the bound crossed: every later read fails with it.
	err error
}

func (c *boundConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if hit := c.account(p[:n]); hit != nil {
		// The bytes read are dropped with the connection: the driver
		// closes it on a read error.
		c.err = hit
		c.b.hit.Store(hit)
		return 0, hit
	}
	return n, err
}

// account follows the bytes read and returns the bound they cross.
func (c *boundConn) account(p []byte) *BoundError {
	c.answer += int64(len(p))
	if !c.framed {
		if c.answer > c.b.answer {
			return &BoundError{Limit: c.b.answer, Answer: true, MaxMessageBytes: c.b.maxMessage, MaxBatchBytes: c.b.maxBatch}
		}
		return nil
	}
	for len(p) > 0 {
		if c.left > 0 {
			k := min(c.left, int64(len(p)))
			c.left -= k
			p = p[k:]
			continue
		}
		k := copy(c.hdr[c.nhdr:], p)
		c.nhdr += k
		p = p[k:]
		if c.nhdr < len(c.hdr) {
			return nil
		}
		c.nhdr = 0
		n := int64(c.hdr[0]) | int64(c.hdr[1])<<8 | int64(c.hdr[2])<<16
		if !c.more {
			c.size = 0
		}
		c.size += n
		c.more = n == maxFragment
		c.left = n
		if c.size > c.b.packet {
			return &BoundError{Limit: c.b.packet, MaxMessageBytes: c.b.maxMessage, MaxBatchBytes: c.b.maxBatch}
		}
	}
	return nil
}

func (c *boundConn) Write(p []byte) (int, error) {
	if !c.greeted {
		c.greeted = true
		// The handshake response: a 4-byte packet header, then the
		// client's capability flags. TLS starts right after it,
		// compression after authentication; both hide the packets.
		if len(p) < 8 || binary.LittleEndian.Uint32(p[4:8])&(clientSSL|clientCompress) != 0 {
			c.framed = false
		}
	}
	if len(p) > keyUpdateWrite {
		c.answer = 0
	}
	return c.Conn.Write(p)
}

// SyscallConn lets the driver's liveness check (CheckConnLiveness) look at
// the socket of an idle connection, as it does without the wrapper. It
// reads the socket directly only to find a connection with unexpected
// bytes, which it then discards.
func (c *boundConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("mailbox connection has no socket")
	}
	return sc.SyscallConn()
}
