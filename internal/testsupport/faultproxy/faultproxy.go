// Package faultproxy is a thin in-process TCP proxy on loopback that fault
// tests put between a process and one of its dependencies (PostgreSQL,
// MariaDB, a Kafka broker, the API server) to break the connection in ways
// a real network does:
//
//   - Pass: bytes flow both ways;
//   - Reset: every live connection is reset (RST on both sides) at once,
//     and every new one as soon as it is accepted;
//   - Refuse: the listening port is closed, so new connections are refused
//     (ECONNREFUSED); live ones keep passing; it opens again on the same
//     port when the mode changes;
//   - Stall: nothing is forwarded either way and nothing is closed: live
//     and new connections are held open, their bytes kept (TCP windows
//     fill and the peers block) and forwarded when the mode changes;
//
// and, independent of the mode, a latency added to every chunk the client
// sends (SetLatency), and an Inspector that sees every chunk the client
// sends and may cut the connection right there (Cut), or forward the chunk
// and then cut the connection before any byte of the server's answer
// reaches the client (ForwardThenCut): the lost acknowledgement of a
// COMMIT the server did carry out (PostgresCommit recognises one).
//
// For a Kafka broker, whose clients learn the brokers' addresses from
// metadata and would bypass a proxy on the bootstrap address alone,
// Listen makes a net.Listener for the broker itself (kfake.ListenFn) whose
// Addr is the proxy's: the broker advertises the proxy.
//
// Chunks are what one read returned; a protocol message split across two
// reads is seen as two chunks (on loopback each small message of pgx, the
// MySQL driver or franz-go arrives whole in practice). Test code only.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// Mode is what the proxy does with connections.
type Mode int

const (
	// Pass forwards bytes both ways.
	Pass Mode = iota
	// Reset resets every live connection once and every new one at once.
	Reset
	// Refuse closes the listening port: new connections are refused.
	Refuse
	// Stall forwards nothing and closes nothing.
	Stall
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Reset:
		return "reset"
	case Refuse:
		return "refuse"
	case Stall:
		return "stall"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Verdict is an Inspector's decision on one chunk from the client.
type Verdict int

const (
	// Forward sends the chunk on.
	Forward Verdict = iota
	// Cut resets the connection without forwarding the chunk.
	Cut
	// ForwardThenCut sends the chunk to the server, then resets the
	// client's side at once; no byte the server sends from then on
	// reaches the client. The server's side is closed once the server
	// answered (its answer is discarded) or after a few seconds.
	ForwardThenCut
)

// Chunk is one read from a client connection.
type Chunk struct {
	// Conn numbers the proxy's connections from 1 in accept order.
	Conn int64
	Data []byte
}

// Inspector decides what happens to a chunk from the client. It runs on
// the connection's goroutine before the chunk is forwarded, may call the
// proxy's methods (SetMode to stall right there), and must not keep Data.
type Inspector func(Chunk) Verdict

// Stats counts what the proxy did.
type Stats struct {
	// Accepted connections; Resets of connections (RST); Cuts made by an
	// Inspector (Cut and ForwardThenCut).
	Accepted, Resets, Cuts int64
	// Delayed counts the client's chunks forwarded after the latency
	// SetLatency set: a test can tell that traffic did go through it.
	Delayed int64
}

// Proxy forwards connections from Addr to an upstream address.
type Proxy struct {
	upstream string
	addr     string

	mu       sync.Mutex
	ln       net.Listener
	mode     Mode
	resume   chan struct{} // closed when a stall ends
	latency  time.Duration
	inspect  Inspector
	links    map[*link]struct{}
	closed   bool
	stats    Stats
	nextConn int64

	wg sync.WaitGroup
}

// New is Start for a test: a proxy that cannot start fails it, and the
// proxy closes when the test ends.
func New(t testing.TB, upstream string) *Proxy {
	t.Helper()
	p, err := Start(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Start listens on a free loopback port (below Linux's ephemeral range, so
// that no outgoing connection takes the port while it is closed by Refuse)
// and forwards every connection to upstream.
func Start(upstream string) (*Proxy, error) {
	ln, err := listenLow()
	if err != nil {
		return nil, err
	}
	return serve(upstream, ln), nil
}

// StartOn is Start on a given loopback address ("127.0.0.1:0" for any
// port).
func StartOn(addr, upstream string) (*Proxy, error) {
	ln, err := listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen on %s: %w", addr, err)
	}
	return serve(upstream, ln), nil
}

func serve(upstream string, ln net.Listener) *Proxy {
	p := &Proxy{upstream: upstream, addr: ln.Addr().String(), ln: ln, links: map[*link]struct{}{}, resume: make(chan struct{})}
	p.wg.Add(1)
	go p.accept(ln)
	return p
}

// listenLow listens on a random loopback port between 20000 and 32000.
func listenLow() (net.Listener, error) {
	var last error
	for range 100 {
		ln, err := listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))) //nolint:gosec // a port, not a secret
		if err == nil {
			return ln, nil
		}
		last = err
	}
	return nil, fmt.Errorf("faultproxy: no free loopback port between 20000 and 32000: %w", last)
}

// Listen is kfake.ListenFn's argument: it listens on a hidden loopback
// port for the server, starts a proxy on address (port 0: a free one
// below the ephemeral range) forwarding to it, and returns the server's
// listener reporting the proxy's address, so the server advertises the
// proxy. The proxy is handed to onProxy; closing the listener does not
// close the proxy.
func Listen(onProxy func(*Proxy)) func(network, address string) (net.Listener, error) {
	return func(network, address string) (net.Listener, error) {
		inner, err := listen(network, "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("faultproxy: listen for the server: %w", err)
		}
		var p *Proxy
		if _, port, _ := net.SplitHostPort(address); port == "" || port == "0" {
			p, err = Start(inner.Addr().String())
		} else {
			p, err = StartOn(address, inner.Addr().String())
		}
		if err != nil {
			_ = inner.Close()
			return nil, err
		}
		onProxy(p)
		return advertised{Listener: inner, addr: p.ln.Addr()}, nil
	}
}

// listen listens on a loopback address; a listener lives until closed.
func listen(network, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(context.Background(), network, addr)
}

type advertised struct {
	net.Listener
	addr net.Addr
}

func (a advertised) Addr() net.Addr { return a.addr }

// Addr is the proxy's address (host:port) for the client.
func (p *Proxy) Addr() string { return p.addr }

// Mode is the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches the mode. Leaving Stall forwards what was held;
// entering Reset resets every live connection; entering Refuse closes the
// port and leaving it opens the port again.
func (p *Proxy) SetMode(m Mode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("faultproxy: closed")
	}
	old := p.mode
	if old == m {
		return nil
	}
	if old == Refuse {
		ln, err := listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("faultproxy: listen on %s again: %w", p.addr, err)
		}
		p.ln = ln
		p.wg.Add(1)
		go p.accept(ln)
	}
	p.mode = m
	switch m {
	case Stall:
		p.resume = make(chan struct{})
	case Reset:
		for l := range p.links {
			p.stats.Resets++
			l.reset()
		}
	case Refuse:
		_ = p.ln.Close()
	}
	if old == Stall {
		close(p.resume)
	}
	return nil
}

// ResetAll resets every live connection once and stays in its mode.
func (p *Proxy) ResetAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for l := range p.links {
		p.stats.Resets++
		n++
		l.reset()
	}
	return n
}

// SetLatency delays every chunk from a client by d before it is forwarded
// (0: none).
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// SetInspector installs fn (nil removes it).
func (p *Proxy) SetInspector(fn Inspector) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inspect = fn
}

// Stats reports the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Live counts the connections open now.
func (p *Proxy) Live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close closes the port and resets every connection, and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	if p.mode != Refuse {
		_ = p.ln.Close()
	}
	if p.mode == Stall {
		close(p.resume)
	}
	for l := range p.links {
		l.reset()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed (Refuse or Close)
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			resetConn(c)
			return
		}
		p.stats.Accepted++
		p.nextConn++
		l := &link{id: p.nextConn, client: c, done: make(chan struct{})}
		if p.mode == Reset {
			p.stats.Resets++
			p.mu.Unlock()
			resetConn(c)
			continue
		}
		p.links[l] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.run(l)
	}
}

// link is one proxied connection.
type link struct {
	id     int64
	client net.Conn

	mu     sync.Mutex // guards server, cut, and writes to the client
	server net.Conn
	cut    bool

	done chan struct{}
	once sync.Once
}

// reset closes both sides with RST.
func (l *link) reset() {
	l.once.Do(func() {
		close(l.done)
		resetConn(l.client)
		l.mu.Lock()
		if l.server != nil {
			resetConn(l.server)
		}
		l.mu.Unlock()
	})
}

// close closes both sides (FIN).
func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		_ = l.client.Close()
		l.mu.Lock()
		if l.server != nil {
			_ = l.server.Close()
		}
		l.mu.Unlock()
	})
}

func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// wait returns once the proxy does not stall (true), or false when the
// link ended meanwhile.
func (p *Proxy) wait(l *link) bool {
	for {
		p.mu.Lock()
		if p.mode != Stall || p.closed {
			p.mu.Unlock()
			select {
			case <-l.done:
				return false
			default:
				return true
			}
		}
		ch := p.resume
		p.mu.Unlock()
		select {
		case <-ch:
		case <-l.done:
			return false
		}
	}
}

func (p *Proxy) run(l *link) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	// A stalled proxy holds a new connection before dialling.
	if !p.wait(l) {
		return
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	server, err := d.DialContext(ctx, "tcp", p.upstream)
	cancel()
	if err != nil {
		l.reset() // the upstream refused: so does the proxy
		return
	}
	l.mu.Lock()
	l.server = server
	l.mu.Unlock()
	select {
	case <-l.done: // reset while dialling
		resetConn(server)
		return
	default:
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.toServer(l, server) }()
	go func() { defer wg.Done(); p.toClient(l, server) }()
	wg.Wait()
}

// toServer forwards the client's chunks.
func (p *Proxy) toServer(l *link, server net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := l.client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			inspect, latency := p.inspect, p.latency
			p.mu.Unlock()
			verdict := Forward
			if inspect != nil {
				verdict = inspect(Chunk{Conn: l.id, Data: buf[:n]})
			}
			if verdict == Cut {
				p.count(func(s *Stats) { s.Cuts++; s.Resets++ })
				l.reset()
				return
			}
			if !p.wait(l) {
				return
			}
			if latency > 0 {
				t := time.NewTimer(latency)
				select {
				case <-t.C:
				case <-l.done:
					t.Stop()
					return
				}
				p.count(func(s *Stats) { s.Delayed++ })
			}
			if verdict == ForwardThenCut {
				p.forwardThenCut(l, server, buf[:n])
				return
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				l.close()
				return
			}
		}
		if err != nil {
			l.close()
			return
		}
	}
}

// forwardThenCut sends chunk to the server after marking the link cut (so
// toClient drops whatever the server answers from now on), resets the
// client's side, and leaves the server's side to toClient, which closes
// it at the server's first answer, or after cutGrace.
func (p *Proxy) forwardThenCut(l *link, server net.Conn, chunk []byte) {
	l.mu.Lock()
	l.cut = true
	l.mu.Unlock()
	// Counted before the chunk leaves: a test that sees the server receive
	// it must also see the cut counted.
	p.count(func(s *Stats) { s.Cuts++ })
	_, _ = server.Write(chunk)
	resetConn(l.client)
	time.AfterFunc(cutGrace, l.close)
}

// cutGrace bounds how long the server's side of a ForwardThenCut link
// waits for the server's answer.
const cutGrace = 5 * time.Second

// toClient forwards the server's chunks, unless the link was cut.
func (p *Proxy) toClient(l *link, server net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if !p.wait(l) {
				return
			}
			l.mu.Lock()
			if l.cut {
				l.mu.Unlock()
				l.close() // the server answered: its answer is lost
				return
			}
			_, werr := l.client.Write(buf[:n])
			l.mu.Unlock()
			if werr != nil {
				l.close()
				return
			}
		}
		if err != nil {
			l.mu.Lock()
			cut := l.cut
			l.mu.Unlock()
			if !cut {
				l.close()
			}
			return
		}
	}
}

func (p *Proxy) count(fn func(*Stats)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(&p.stats)
}
