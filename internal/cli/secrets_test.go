package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// No command shows a credential of its configuration, whatever is wrong
// with it: not in the one-line error, not in the log.
func TestNoCommandShowsACredential(t *testing.T) {
	const marker = "Zq9Marker"
	goodDB := pgtest.New(t)
	goodMailbox := "root@tcp(" + closingServer(t) + ")/mbx"
	cases := []struct {
		name, mailbox, database, broker string
		args                            []string
		exit                            int
	}{
		{"database password with an unescaped @", goodMailbox, "postgres://postgres:p@ss@" + marker + "@127.0.0.1:1/ff?connect_timeout=2", "127.0.0.1:1",
			[]string{"migrate"}, exitUsage},
		{"database password with an unescaped /", goodMailbox, "postgres://postgres:5432/" + marker + "@127.0.0.1:1/ff?connect_timeout=2", "127.0.0.1:1",
			[]string{"export"}, exitUsage},
		{"database unreachable", goodMailbox, "postgres://postgres:" + marker + "@127.0.0.1:1/ff?connect_timeout=2", "127.0.0.1:1",
			[]string{"migrate"}, exitFailed},
		{"database host unknown", goodMailbox, "postgres://postgres:" + marker + "@db.invalid/ff?connect_timeout=2&sslmode=verify-full", "127.0.0.1:1",
			[]string{"ledger"}, exitFailed},
		{"database plain text beyond loopback, refused", goodMailbox, "postgres://postgres:" + marker + "@db.invalid/ff?connect_timeout=2", "127.0.0.1:1",
			[]string{"ledger"}, exitUsage},
		{"database keyword form", goodMailbox, "host=127.0.0.1 port=1 user=postgres password='" + marker + "' dbname=ff connect_timeout=2", "127.0.0.1:1",
			[]string{"migrate"}, exitFailed},
		{"mailbox DSN without database name", "root:" + marker + "/x@tcp(127.0.0.1:1)", goodDB, "127.0.0.1:1",
			[]string{"pump", "--drain"}, exitFailed},
		{"mailbox password with @, server gone", "root:p@ss@" + marker + "@tcp(" + closingServer(t) + ")/mbx", goodDB, "127.0.0.1:1",
			[]string{"pump", "--drain"}, exitFailed},
		{"mailbox unreachable", "root:" + marker + "@tcp(127.0.0.1:1)/mbx?timeout=2s", goodDB, "127.0.0.1:1",
			[]string{"simulate"}, exitFailed},
		{"mailbox DSN without database name, tables created", "root:" + marker + "/x@tcp(127.0.0.1:1)", goodDB, "127.0.0.1:1",
			[]string{"simulate", "--create-mailbox"}, exitFailed},
		{"mailbox password with @, tables created", "root:p@ss@" + marker + "@tcp(" + closingServer(t) + ")/mbx", goodDB, "127.0.0.1:1",
			[]string{"simulate", "--create-mailbox"}, exitFailed},
		{"broker with credentials", goodMailbox, goodDB, "user:" + marker + "@127.0.0.1:9092",
			[]string{"pump", "--drain"}, exitUsage},
		{"mailbox DSN with allowAllFiles", "root:" + marker + "@tcp(" + closingServer(t) + ")/mbx?allowAllFiles=true", goodDB, "127.0.0.1:1",
			[]string{"pump", "--drain"}, exitUsage},
		{"mailbox DSN with tls=skip-verify", "root:" + marker + "@tcp(" + closingServer(t) + ")/mbx?tls=skip-verify", goodDB, "127.0.0.1:1",
			[]string{"simulate", "--create-mailbox"}, exitUsage},
		{"database DSN with passfile", goodMailbox, "postgres://postgres:" + marker + "@127.0.0.1:1/ff?passfile=/etc/passwd", "127.0.0.1:1",
			[]string{"migrate"}, exitUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := append(c.args[:1:1], "--config", writeFeed(t, c.mailbox, c.database, c.broker))
			args = append(args, c.args[1:]...)
			code, out, errOut := runCLIContext(ctx, args...)
			if code != c.exit {
				t.Errorf("exit %d, want %d\n%s", code, c.exit, errOut)
			}
			if strings.Contains(out+errOut, marker[2:]) {
				t.Errorf("output shows the password:\n%s%s", out, errOut)
			}
		})
	}
}

// `flightfeed pump --config` refuses a DSN option that would let a server
// read local files: exit status 2 and one line that names the field and
// the option, before anything is dialled.
func TestPumpRefusesDangerousDSNOptions(t *testing.T) {
	const marker = "Zq9Marker"
	for _, c := range []struct{ mailbox, database, want string }{
		{"root:" + marker + "@tcp(127.0.0.1:1)/mbx?allowAllFiles=true", "postgres://postgres@127.0.0.1:1/ff?sslmode=disable",
			"mailbox.dsn: Invalid value: \"***@tcp(127.0.0.1:1)/mbx?allowAllFiles=true\": option allowAllFiles=true is refused"},
		{"root@tcp(127.0.0.1:1)/mbx", "postgres://postgres:" + marker + "@127.0.0.1:1/ff?sslrootcert=/etc/passwd",
			`database.dsn: Invalid value: "postgres://***@127.0.0.1:1/ff?sslrootcert=/etc/passwd": key "sslrootcert" is refused`},
	} {
		code, out, errOut := runCLIContext(t.Context(), "pump", "--config", writeFeed(t, c.mailbox, c.database, "127.0.0.1:1"), "--drain")
		if code != exitUsage || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("exit %d, want %d and one line saying %q:\n%s", code, exitUsage, c.want, errOut)
		}
		if strings.Contains(out+errOut, marker[2:]) {
			t.Errorf("output shows the password:\n%s%s", out, errOut)
		}
	}
}
