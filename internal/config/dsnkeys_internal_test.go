package config

import (
	"slices"
	"strings"
	"testing"
)

// The keys a database DSN holds, as libpq and pgconn split it: quoting
// and escapes in a keyword/value string, user information, bracketed
// hosts, host lists and ports in a URI, and where its query starts and
// its pairs end. A wrong split lets a refused key through under another
// name.
func TestDatabaseKeysSplit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dsn  string
		want []string
		err  string
	}{
		// Keyword/value strings.
		{dsn: "host=db user=u", want: []string{"host", "user"}},
		{dsn: "host=db user", err: "keyword without value"},
		{dsn: "password='it\\'s' sslmode=require", want: []string{"password", "sslmode"}},
		{dsn: "password='abc", err: "unterminated quoted value"},
		{dsn: "password='abc\\", err: "unterminated quoted value"},
		{dsn: "password=a\\ passfile=/x", want: []string{"password"}},
		{dsn: "password=abc\\", want: []string{"password"}},
		// URIs: user information ends at the first '@' before any '/'.
		{dsn: "postgres://u:a?b=1@db/ff", want: nil},
		{dsn: "postgresql://u:a?b=1@db/ff", want: nil},
		{dsn: "postgres://u:a?passfile=/x@db/ff", want: []string{"passfile"}},
		{dsn: "postgres://u:a?b@db/ff", want: nil},
		{dsn: "postgres://@[a?passfile=/x]/ff", want: nil},
		// Hosts: bracketed, with ports, listed.
		{dsn: "postgres://[a?passfile=/x]/ff", want: nil},
		{dsn: "postgres://[::1]/ff?x=]&sslmode=require", want: []string{"sslmode", "x"}},
		{dsn: "postgres://[::1/ff?options=x", err: "unterminated IPv6 address"},
		{dsn: "postgres://db", want: nil},
		{dsn: "postgres://db:5432", want: nil},
		{dsn: "postgres://db:5432,[::1]:5433/ff?sslmode=require", want: []string{"sslmode"}},
		// The query: after the database name's first '?', pairs split at
		// each '&', keys percent-decoded (kept as written when they do not
		// decode), sorted and each once.
		{dsn: "postgres://db/ff", want: nil},
		{dsn: "postgres://db/?sslmode=require", want: []string{"sslmode"}},
		{dsn: "postgres://db/ff?a=1?b=2", want: []string{"a"}},
		{dsn: "postgres://db/ff?c=3&a=1&b=2&a=4", want: []string{"a", "b", "c"}},
		{dsn: "postgres://db/ff?&sslmode=require", err: "query parameter without '='"},
		{dsn: "postgres://db/ff?sslmode=require&", want: []string{"sslmode"}},
		{dsn: "postgres://db/ff?sslmode", err: "query parameter without '='"},
		{dsn: "postgres://db/ff?pass%66ile=x", want: []string{"passfile"}},
		{dsn: "postgres://db/ff?pass%zzfile=x", want: []string{"pass%zzfile"}},
	} {
		got, err := databaseKeys(c.dsn)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("databaseKeys(%q) = %q, %v; want error %q", c.dsn, got, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("databaseKeys(%q) = %q, %v; want %q", c.dsn, got, err, c.want)
		}
	}
}

// A mailbox DSN's options are its query's, after the database name; the
// driver reads a boolean as 1, true, TRUE or True, the last one winning.
func TestMailboxOptions(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string][]string{
		"u:p@tcp(h:3306)/db":                  nil,
		"u:p@tcp(h:3306)/db?":                 nil,
		"u:p?x=1@tcp(h:3306)/db":              nil,
		"u:p@tcp(h:3306)/db?tls=true&loc=UTC": {"tls", "loc"},
	} {
		if got := mailboxOptionKeys(dsn); !slices.Equal(got, want) {
			t.Errorf("mailboxOptionKeys(%q) = %q, want %q", dsn, got, want)
		}
	}
	for _, c := range []struct {
		query string
		want  bool
	}{
		{"tls=1", true}, {"tls=true", true}, {"tls=TRUE", true}, {"tls=True", true},
		{"tls=0", false}, {"tls=yes", false}, {"tls=true&tls=false", false}, {"tls=false&tls=1", true},
		{"tlsx=true", false}, {"", false},
	} {
		if got := mailboxOptionTrue("u:p@tcp(h:3306)/db?"+c.query, "tls"); got != c.want {
			t.Errorf("mailboxOptionTrue(%q, tls) = %v, want %v", c.query, got, c.want)
		}
	}
}
