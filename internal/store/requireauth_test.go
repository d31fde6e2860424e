package store_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
)

// passwordPG is a fake PostgreSQL server on loopback that asks every
// client for its password the way ask says (cleartext or MD5) and records
// what comes back, then refuses the login.
type passwordPG struct {
	ln      net.Listener
	mu      sync.Mutex
	asked   int
	answers []string // the PasswordMessage bodies received
}

func startPasswordPG(t *testing.T, ask pgproto3.BackendMessage) *passwordPG {
	t.Helper()
	f := &passwordPG{}
	f.ln = loopback.Serve(t, func(c net.Conn) { f.serve(c, ask) })
	return f
}

func (f *passwordPG) serve(c net.Conn, ask pgproto3.BackendMessage) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	be := pgproto3.NewBackend(c, c)
	msg, err := be.ReceiveStartupMessage()
	if err != nil {
		return
	}
	if _, ok := msg.(*pgproto3.SSLRequest); ok {
		if _, err := c.Write([]byte{'N'}); err != nil {
			return
		}
		if _, err := be.ReceiveStartupMessage(); err != nil {
			return
		}
	}
	// Counted before the request goes out: the client fails as soon as it
	// reads it, and the test reads the count right after the client returns.
	f.mu.Lock()
	f.asked++
	f.mu.Unlock()
	be.Send(ask)
	if err := be.Flush(); err != nil {
		return
	}
	if err := be.SetAuthType(authType(ask)); err != nil {
		return
	}
	reply, err := be.Receive()
	if err != nil {
		return // the client hung up without answering
	}
	if pm, ok := reply.(*pgproto3.PasswordMessage); ok {
		f.mu.Lock()
		f.answers = append(f.answers, pm.Password)
		f.mu.Unlock()
	}
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01", Message: "password authentication failed"})
	_ = be.Flush()
}

func authType(m pgproto3.BackendMessage) uint32 {
	if _, ok := m.(*pgproto3.AuthenticationMD5Password); ok {
		return pgproto3.AuthTypeMD5Password
	}
	return pgproto3.AuthTypeCleartextPassword
}

func (f *passwordPG) result() (asked int, answers []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked, append([]string(nil), f.answers...)
}

// A server that asks for the password in clear text or as MD5 never gets
// it, from the pump's pool (Open) or the migration path (SchemaVersion):
// the connection fails naming the requirement. A DSN with its own
// require_auth opts back in, and then the password is sent.
func TestPasswordRequestsAreRefusedUnlessOptedIn(t *testing.T) {
	const password = "Zq9-secret"
	for _, tc := range []struct {
		name, extra string
		ask         pgproto3.BackendMessage
		sent        bool
	}{
		{"cleartext, default", "", &pgproto3.AuthenticationCleartextPassword{}, false},
		{"MD5, default", "", &pgproto3.AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}}, false},
		{"cleartext, require_auth=password", "&require_auth=password", &pgproto3.AuthenticationCleartextPassword{}, true},
		{"MD5, require_auth=scram-sha-256,md5", "&require_auth=scram-sha-256,md5", &pgproto3.AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}}, true},
		{"cleartext, require_auth=md5 allows only MD5", "&require_auth=md5", &pgproto3.AuthenticationCleartextPassword{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := startPasswordPG(t, tc.ask)
			dsn := "postgres://flightfeed:" + password + "@" + fake.ln.Addr().String() + "/ff?sslmode=disable&connect_timeout=5" + tc.extra
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := store.Open(ctx, dsn, store.Options{})
			if err == nil {
				s.Close()
				t.Fatal("the fake server let the store open")
			}
			_, _, serr := store.SchemaVersion(ctx, dsn)
			if serr == nil {
				t.Fatal("the fake server let SchemaVersion connect")
			}
			asked, answers := fake.result()
			if asked < 2 {
				t.Fatalf("the server asked %d times, want at least 2 (Open: %v; SchemaVersion: %v)", asked, err, serr)
			}
			if !tc.sent {
				if len(answers) != 0 {
					t.Fatalf("the client answered the password request %d times", len(answers))
				}
				for _, e := range []error{err, serr} {
					if !strings.Contains(e.Error(), "authentication method requirement") {
						t.Errorf("error does not name the requirement: %v", e)
					}
				}
				return
			}
			if len(answers) < 2 {
				t.Fatalf("opted in, the client answered %d of %d requests (Open: %v)", len(answers), asked, err)
			}
			if _, md5 := tc.ask.(*pgproto3.AuthenticationMD5Password); !md5 && answers[0] != password {
				t.Errorf("cleartext answer %q, want the password", answers[0])
			}
		})
	}
}
