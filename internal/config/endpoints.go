package config

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// MailboxAddress is the host:port a mailbox DSN connects to, "" when the
// DSN does not parse or names a Unix socket. It reads nothing else of the
// DSN: the operator calls it to open the pump pods' egress to the
// mailbox, and keeps no other part.
func MailboxAddress(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil || cfg.Net != "tcp" || cfg.Addr == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return net.JoinHostPort(cfg.Addr, "3306")
	}
	return cfg.Addr
}

// DatabaseAddresses are the host:port a database DSN may connect to (its
// first host and every fallback, in order, each once), nil when it does
// not parse; Unix sockets are left out. Like MailboxAddress, for the pump
// pods' egress.
func DatabaseAddresses(dsn string) []string {
	cfg, err := pgconn.ParseConfigWithOptions(dsn, DatabaseParseOptions())
	if err != nil {
		return nil
	}
	var out []string
	add := func(host string, port uint16) {
		if host == "" || strings.HasPrefix(host, "/") {
			return
		}
		a := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	add(cfg.Host, cfg.Port)
	for _, fb := range cfg.Fallbacks {
		add(fb.Host, fb.Port)
	}
	return out
}
