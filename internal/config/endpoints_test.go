package config

import (
	"slices"
	"testing"
)

// The pump pods' egress is opened to the host:port the DSNs connect to:
// every host a database DSN may try, the mailbox's address with MySQL's
// default port, never a Unix socket, nothing from a DSN that does not
// parse.
func TestDependencyAddresses(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		want string
	}{
		{"ff:secret@tcp(mailbox.example:3307)/sis?tls=true", "mailbox.example:3307"},
		{"ff:secret@tcp(10.1.2.3)/sis", "10.1.2.3:3306"},
		{"ff:secret@unix(/run/mysqld/mysqld.sock)/sis", ""},
		{"not a dsn(", ""},
	} {
		if got := MailboxAddress(tc.dsn); got != tc.want {
			t.Errorf("MailboxAddress(%q) = %q, want %q", RedactDSN(tc.dsn), got, tc.want)
		}
	}
	for _, tc := range []struct {
		dsn  string
		want []string
	}{
		{"postgres://ff:secret@db-1.example:5433,db-2.example/flightfeed?sslmode=verify-full", []string{"db-1.example:5433", "db-2.example:5432"}},
		{"host=10.0.0.7 port=6432 user=ff password=secret dbname=flightfeed sslmode=verify-full", []string{"10.0.0.7:6432"}},
		{"host=/var/run/postgresql user=ff dbname=flightfeed", nil},
		{"postgres://ff@[::1", nil},
	} {
		if got := DatabaseAddresses(tc.dsn); !slices.Equal(got, tc.want) {
			t.Errorf("DatabaseAddresses(%q) = %q, want %q", RedactDSN(tc.dsn), got, tc.want)
		}
	}
}
