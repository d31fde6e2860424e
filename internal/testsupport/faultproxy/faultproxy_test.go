package faultproxy_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/testsupport/faultproxy"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// echo is an upstream that answers every line with "echo: " + the line and
// counts the lines it received.
type echo struct {
	addr string
	mu   sync.Mutex
	got  []string
}

func newEcho(t *testing.T) *echo {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	e := &echo{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					e.mu.Lock()
					e.got = append(e.got, strings.TrimSpace(line))
					e.mu.Unlock()
					if _, err := io.WriteString(c, "echo: "+line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return e
}

func (e *echo) received() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

func start(t *testing.T, upstream string) *faultproxy.Proxy { return faultproxy.New(t, upstream) }

type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

// ask sends a line and returns the answer or the error, waiting at most d.
func (c *client) ask(line string, d time.Duration) (string, error) {
	c.t.Helper()
	_ = c.c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c.c, line+"\n"); err != nil {
		return "", err
	}
	s, err := c.r.ReadString('\n')
	return strings.TrimSpace(s), err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestPassForwardsBothWays(t *testing.T) {
	e := newEcho(t)
	p := start(t, e.addr)
	c := dial(t, p.Addr())
	for _, line := range []string{"one", "two"} {
		got, err := c.ask(line, 5*time.Second)
		if err != nil || got != "echo: "+line {
			t.Fatalf("ask %q: %q, %v", line, got, err)
		}
	}
	if s := p.Stats(); s.Accepted != 1 || s.Resets != 0 {
		t.Errorf("stats %+v, want 1 accepted, no reset", s)
	}
}

func TestResetResetsLiveAndNewConnections(t *testing.T) {
	e := newEcho(t)
	p := start(t, e.addr)
	c := dial(t, p.Addr())
	if _, err := c.ask("before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.SetMode(faultproxy.Reset); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ask("after", 5*time.Second); !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Fatalf("a live connection after Reset: %v, want reset", err)
	}
	// A new connection is reset as soon as it is accepted: connect itself
	// may already see the RST.
	if n, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second); err == nil {
		t.Cleanup(func() { _ = n.Close() })
		_ = n.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(n, "new\n")
		if _, err := bufio.NewReader(n).ReadString('\n'); err == nil || isTimeout(err) {
			t.Fatalf("a new connection under Reset: %v, want reset", err)
		}
	}
	if err := p.SetMode(faultproxy.Pass); err != nil {
		t.Fatal(err)
	}
	if got, err := dial(t, p.Addr()).ask("again", 5*time.Second); err != nil || got != "echo: again" {
		t.Fatalf("after Pass again: %q, %v", got, err)
	}
	if s := p.Stats(); s.Resets < 2 {
		t.Errorf("stats %+v, want at least 2 resets", s)
	}
}

func TestRefuseClosesThePortAndReopensIt(t *testing.T) {
	e := newEcho(t)
	p := start(t, e.addr)
	live := dial(t, p.Addr())
	if err := p.SetMode(faultproxy.Refuse); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial under Refuse: %v, want connection refused", err)
	}
	if got, err := live.ask("live", 5*time.Second); err != nil || got != "echo: live" {
		t.Fatalf("a live connection under Refuse: %q, %v", got, err)
	}
	if err := p.SetMode(faultproxy.Pass); err != nil {
		t.Fatal(err)
	}
	if got, err := dial(t, p.Addr()).ask("back", 5*time.Second); err != nil || got != "echo: back" {
		t.Fatalf("after Refuse: %q, %v", got, err)
	}
}

func TestStallHoldsBytesAndConnections(t *testing.T) {
	e := newEcho(t)
	p := start(t, e.addr)
	c := dial(t, p.Addr())
	if err := p.SetMode(faultproxy.Stall); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ask("held", 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("a live connection under Stall: %v, want no answer", err)
	}
	if got := e.received(); len(got) != 0 {
		t.Fatalf("the upstream received %q under Stall", got)
	}
	n := dial(t, p.Addr()) // accepted, held
	_ = n.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(n.c, "new\n"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetMode(faultproxy.Pass); err != nil {
		t.Fatal(err)
	}
	_ = c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := c.r.ReadString('\n'); err != nil || got != "echo: held\n" {
		t.Fatalf("the held line after Stall: %q, %v", got, err)
	}
	if got, err := n.r.ReadString('\n'); err != nil || got != "echo: new\n" {
		t.Fatalf("the new connection's line after Stall: %q, %v", got, err)
	}
}

func TestLatencyDelaysEveryChunk(t *testing.T) {
	e := newEcho(t)
	p := start(t, e.addr)
	p.SetLatency(time.Second)
	c := dial(t, p.Addr())
	// Not a timing assertion on the proxy's speed: the answer must not
	// come within a bound well under the latency, and must come after it.
	if _, err := c.ask("slow", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("answer within 200ms of a 1s latency: %v", err)
	}
	_ = c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := c.r.ReadString('\n'); err != nil || got != "echo: slow\n" {
		t.Fatalf("the delayed answer: %q, %v", got, err)
	}
	if got := p.Stats().Delayed; got != 1 {
		t.Fatalf("Stats().Delayed = %d after one delayed chunk, want 1", got)
	}
	p.SetLatency(0)
	if got, err := c.ask("fast", 10*time.Second); err != nil || got != "echo: fast" || p.Stats().Delayed != 1 {
		t.Fatalf("without latency: %q, %v, %d delayed (want 1)", got, err, p.Stats().Delayed)
	}
}

func TestInspectorCutAndForwardThenCut(t *testing.T) {
	e := newEcho(t)
	p := start(t, e.addr)
	p.SetInspector(func(c faultproxy.Chunk) faultproxy.Verdict {
		switch strings.TrimSpace(string(c.Data)) {
		case "drop":
			return faultproxy.Cut
		case "commit":
			return faultproxy.ForwardThenCut
		}
		return faultproxy.Forward
	})
	c := dial(t, p.Addr())
	if _, err := c.ask("drop", 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("Cut: %v, want the connection reset", err)
	}
	c = dial(t, p.Addr())
	if got, err := c.ask("ok", 5*time.Second); err != nil || got != "echo: ok" {
		t.Fatalf("ok: %q, %v", got, err)
	}
	if got, err := c.ask("commit", 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("ForwardThenCut: answer %q, %v; want the connection reset with no answer", got, err)
	}
	// The server did receive the line it never answered to the client.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(strings.Join(e.received(), ","), "commit") {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream never received the forwarded chunk; got %q", e.received())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := e.received(); strings.Contains(strings.Join(got, ","), "drop") {
		t.Errorf("the upstream received the Cut chunk: %q", got)
	}
	if s := p.Stats(); s.Cuts != 2 {
		t.Errorf("stats %+v, want 2 cuts", s)
	}
}

func TestPostgresCommit(t *testing.T) {
	msg := func(typ byte, body string) []byte {
		b := []byte{typ, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], uint32(4+len(body)))
		return append(b, body...)
	}
	startup := []byte{0, 0, 0, 8, 4, 210, 22, 47} // SSLRequest
	for _, tc := range []struct {
		name  string
		chunk []byte
		want  bool
	}{
		{"simple commit", msg('Q', "commit\x00"), true},
		{"upper case with semicolon", msg('Q', " COMMIT; \x00"), true},
		{"end", msg('Q', "END\x00"), true},
		{"parse commit", append(msg('P', "s1\x00commit\x00\x00\x00"), msg('S', "")...), true},
		{"after another message", append(msg('B', "xx"), msg('Q', "commit\x00")...), true},
		{"begin", msg('Q', "begin\x00"), false},
		{"a query naming commit", msg('Q', "select 'commit'\x00"), false},
		{"rollback", msg('Q', "rollback\x00"), false},
		{"startup", startup, false},
		{"split", msg('Q', "commit\x00")[:7], false},
		{"empty", nil, false},
	} {
		if got := faultproxy.PostgresCommit(tc.chunk); got != tc.want {
			t.Errorf("%s: PostgresCommit = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMySQLQuery(t *testing.T) {
	packet := func(cmd byte, text string) []byte {
		n := 1 + len(text)
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 0, cmd}, text...)
	}
	if q, ok := faultproxy.MySQLQuery(packet(0x03, "UPDATE CMINMSGS SET x = 1")); !ok || q != "UPDATE CMINMSGS SET x = 1" {
		t.Errorf("COM_QUERY: %q, %v", q, ok)
	}
	if _, ok := faultproxy.MySQLQuery(packet(0x0e, "")); ok { // COM_PING
		t.Error("COM_PING taken for a query")
	}
	if _, ok := faultproxy.MySQLQuery([]byte{1, 0}); ok {
		t.Error("a short chunk taken for a query")
	}
}

// pgx's Commit through the proxy, its acknowledgement cut: the client gets
// an error, yet the transaction is committed.
func TestLostCommitAcknowledgementWithPgx(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	dsn := pgtest.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	direct, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = direct.Close(context.Background()) }()
	if _, err := direct.Exec(ctx, `CREATE TABLE t (v int)`); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, net.JoinHostPort(cfg.Host, "5432"))
	var commits int
	p.SetInspector(func(c faultproxy.Chunk) faultproxy.Verdict {
		if faultproxy.PostgresCommit(c.Data) {
			commits++
			return faultproxy.ForwardThenCut
		}
		return faultproxy.Forward
	})
	host, port, _ := net.SplitHostPort(p.Addr())
	cfg.Host = host
	cfg.Port = uint16(mustAtoi(t, port))
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("Commit succeeded although its acknowledgement was cut")
	}
	var n int
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := direct.QueryRow(ctx, `SELECT count(*) FROM t WHERE v = 42`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n != 1 || commits != 1 {
		t.Fatalf("rows committed %d, COMMITs seen %d; want 1 and 1", n, commits)
	}
}

// A kfake broker listening through Listen advertises the proxy: a client
// given the proxy's address fetches metadata naming the proxy, and a
// stalled proxy stalls every request the client makes.
func TestListenMakesTheBrokerAdvertiseTheProxy(t *testing.T) {
	var p *faultproxy.Proxy
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ListenFn(faultproxy.Listen(func(px *faultproxy.Proxy) { p = px })), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	t.Cleanup(func() { p.Close() })
	if got := c.ListenAddrs(); len(got) != 1 || got[0] != p.Addr() {
		t.Fatalf("the cluster listens on %v, want the proxy's %s", got, p.Addr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := p.Stats().Accepted
	if before == 0 {
		t.Fatal("the client produced without going through the proxy")
	}
	if err := p.SetMode(faultproxy.Stall); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	// A request with a deadline (a produced record, once in flight, is
	// not given up by an idempotent producer).
	if err := cl.Ping(short); err == nil {
		t.Fatal("the broker answered through a stalled proxy: the client bypasses it")
	}
	if err := p.SetMode(faultproxy.Pass); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("c")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			t.Fatalf("port %q", s)
		}
		n = n*10 + int(r-'0')
	}
	return n
}
