package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// The mailbox and the database carry credentials and flight data. A DSN
// that reaches them in plain text is refused unless every address it
// names is loopback (127.0.0.0/8, ::1, localhost: a server in the pod's
// own network namespace, as in a config file for a laptop) or the feed
// opts in with tls: {mode: disable}, which then shows the
// PlaintextDependency warning. docs/security.md, "Plain text", has the
// defaults and the opt-out.

// Plaintext is what one dependency sends in plain text.
type Plaintext struct {
	// Dependency is "mailbox", "database" or "read database".
	Dependency string
	// Addresses are the host:port the DSN reaches without TLS, loopback
	// ones left out, in the DSN's order.
	Addresses []string
	// OptedIn: the dependency's tls.mode is disable.
	OptedIn bool
	// dsn is scrubbed from what is said of the addresses: a malformed DSN
	// can leave part of its password in what the parser took for a host.
	dsn string
}

// Refused reports whether p must stop the feed: plain text to some
// address other than loopback without the opt-in.
func (p Plaintext) Refused() bool { return len(p.Addresses) > 0 && !p.OptedIn }

// Err is why p is refused, naming the addresses and the way out; nil when
// it is not. It quotes no credential: only hosts and ports.
func (p Plaintext) Err() error {
	if !p.Refused() {
		return nil
	}
	field, secure := "mailbox.tls", "tls=true in the DSN, or mailbox.tls for a private CA"
	if p.Dependency != "mailbox" {
		field, secure = "database.tls", "sslmode=verify-full in the DSN, or database.tls for a private CA"
	}
	return RedactError(fmt.Errorf("plain text to %s is refused: the %s DSN would send its password and data unencrypted to an address other than loopback "+
		"(use %s; or opt in to plain text with %s: {mode: disable})", strings.Join(p.Addresses, ", "), p.Dependency, secure, field), p.dsn)
}

// IsLoopback reports whether host (a name or an IP address, without
// port) is this machine's: localhost or a loopback address. A name other
// than localhost is not, whatever it resolves to: it is not resolved.
func IsLoopback(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// optedIn reports whether t is the plain-text opt-in.
func optedIn(t *v1alpha1.ServerTLS) bool {
	return t != nil && t.Mode == v1alpha1.TLSDisable
}

// enforced reports whether FlightFeed forces verified TLS (a ServerTLS of
// mode verify), whatever the DSN says.
func enforced(t *v1alpha1.ServerTLS) bool {
	return t != nil && t.Mode != v1alpha1.TLSDisable && t.Mode != v1alpha1.TLSUnverified
}

// MailboxPlaintext is what the mailbox DSN sends in plain text under t
// (mailbox.tls). A DSN that does not parse yields nothing: opening the
// mailbox names that error.
func MailboxPlaintext(dsn string, t *v1alpha1.ServerTLS) Plaintext {
	p := Plaintext{Dependency: "mailbox", OptedIn: optedIn(t), dsn: dsn}
	if enforced(t) {
		return p
	}
	// skip-verify and preferred are TLS (unverified: MailboxUnverified);
	// preferred's plain-text fallback is forced off (MailboxConfig).
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil || cfg.TLSConfig == "true" || mailboxUnverifiedTLS(cfg.TLSConfig) {
		return p
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		host = cfg.Addr
	}
	if !IsLoopback(host) {
		p.Addresses = append(p.Addresses, cfg.Addr)
	}
	return p
}

// DatabasePlaintext is what a database DSN sends in plain text under t
// (database.tls): every host pgconn would try without TLS — sslmode
// disable, and the plain-text retries of allow and prefer (pgx's default).
// A Unix socket (a host starting with /) is local. A DSN that does not
// parse yields nothing: opening the database names that error.
func DatabasePlaintext(dependency, dsn string, t *v1alpha1.ServerTLS) Plaintext {
	p := Plaintext{Dependency: dependency, OptedIn: optedIn(t), dsn: dsn}
	if enforced(t) {
		return p
	}
	cfg, err := pgconn.ParseConfigWithOptions(dsn, DatabaseParseOptions())
	if err != nil {
		return p
	}
	add := func(host string, port uint16, tlsOn bool) {
		if tlsOn || strings.HasPrefix(host, "/") || IsLoopback(host) {
			return
		}
		addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if !slices.Contains(p.Addresses, addr) {
			p.Addresses = append(p.Addresses, addr)
		}
	}
	add(cfg.Host, cfg.Port, cfg.TLSConfig != nil)
	for _, fb := range cfg.Fallbacks {
		add(fb.Host, fb.Port, fb.TLSConfig != nil)
	}
	return p
}

// PlaintextOf lists what each of the feed's DSNs sends in plain text: the
// mailbox, the database and, when set, the read database.
func PlaintextOf(spec *v1alpha1.FlightFeedSpec, s Secrets) []Plaintext {
	out := []Plaintext{
		MailboxPlaintext(s.MailboxDSN, spec.Mailbox.TLS),
		DatabasePlaintext("database", s.DatabaseDSN, spec.Database.TLS),
	}
	if s.ReadDatabaseDSN != "" {
		out = append(out, DatabasePlaintext("read database", s.ReadDatabaseDSN, spec.Database.TLS))
	}
	return out
}

// PlaintextWarning is the PlaintextDependency message of a feed: the
// opted-in dependencies reached in plain text beyond loopback, "" when
// there is none.
func PlaintextWarning(ps []Plaintext) string {
	var parts, dsns []string
	for _, p := range ps {
		if p.OptedIn && len(p.Addresses) > 0 {
			parts = append(parts, p.Dependency+" "+strings.Join(p.Addresses, ", "))
			dsns = append(dsns, p.dsn)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return RedactError(errors.New("plain text (tls mode: disable) to "+strings.Join(parts, "; ")+
		": passwords and flight data cross the network unencrypted"), dsns...).Error()
}
