package config

import (
	"crypto/tls"
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

// TLS that does not verify the server's certificate (sslmode require,
// prefer or allow; the mailbox's tls=skip-verify or tls=preferred) is
// encryption against a passive listener only: anyone who can answer at the
// address (a spoofed DNS name, a hijacked route, a pod that took the IP)
// presents any certificate and reads the password exchange — a SCRAM
// exchange it can crack offline — and every flight. It is refused unless
// the feed opts in with tls: {mode: unverified} (or mode: disable, which
// accepts plain text and so cannot be safer for refusing TLS); the opt-in
// shows the UnverifiedTLSDependency warning. A database host on loopback
// or a Unix socket is local, as for plain text (pgx's default sslmode,
// prefer, to 127.0.0.1 keeps working); the mailbox's skip-verify was
// refused on every address before and stays so without the opt-in.
// docs/security.md, "Unverified TLS", has the defaults and the opt-out.

// ErrUnverifiedTLS marks a DSN refused because it reaches an address over
// TLS that does not verify the server's certificate without the feed's
// opt-in.
var ErrUnverifiedTLS = errors.New("unverified TLS is refused")

// Unverified is what one dependency reaches over TLS without verifying
// the server's certificate.
type Unverified struct {
	// Dependency is "mailbox", "database" or "read database".
	Dependency string
	// Setting is the DSN setting that skips verification, as the user
	// would write it: "tls=skip-verify", "sslmode=require"….
	Setting string
	// Addresses are the host:port the DSN reaches over unverified TLS
	// (the database's loopback ones and Unix sockets left out), in the
	// DSN's order.
	Addresses []string
	// OptedIn: the dependency's tls.mode is unverified or disable.
	OptedIn bool
	// dsn is scrubbed from what is said of the addresses (as Plaintext's).
	dsn string
}

// Refused reports whether u must stop the feed: unverified TLS to some
// address without the opt-in.
func (u Unverified) Refused() bool { return len(u.Addresses) > 0 && !u.OptedIn }

// Err is why u is refused, naming the setting, the addresses and the ways
// out; nil when it is not. It wraps ErrUnverifiedTLS and quotes no
// credential.
func (u Unverified) Err() error {
	if !u.Refused() {
		return nil
	}
	field, secure := "mailbox.tls", "tls=true, and mailbox.tls for a private CA"
	if u.Dependency != "mailbox" {
		field, secure = "database.tls", "sslmode=verify-full, and database.tls for a private CA"
	}
	return RedactError(&unverifiedError{msg: fmt.Sprintf("unverified TLS (%s) to %s is refused: it accepts any server certificate, so whoever answers at that address reads the password exchange and the data "+
		"(use %s; or opt in to unverified TLS with %s: {mode: unverified})", u.Setting, strings.Join(u.Addresses, ", "), secure, field)}, u.dsn)
}

// unverifiedError is a refusal of unverified TLS: its own one-line text,
// and errors.Is(err, ErrUnverifiedTLS).
type unverifiedError struct{ msg string }

func (e *unverifiedError) Error() string        { return e.msg }
func (e *unverifiedError) Is(target error) bool { return target == ErrUnverifiedTLS }

// optedInUnverified reports whether t is an opt-in that takes unverified
// TLS: mode unverified, or mode disable (plain text, which is no safer).
func optedInUnverified(t *v1alpha1.ServerTLS) bool {
	return t != nil && (t.Mode == v1alpha1.TLSUnverified || t.Mode == v1alpha1.TLSDisable)
}

// mailboxUnverifiedTLS reports whether a mailbox DSN's tls value skips
// the certificate check.
func mailboxUnverifiedTLS(value string) bool {
	return value == "skip-verify" || value == "preferred"
}

// MailboxUnverified is what the mailbox DSN reaches over unverified TLS
// under t (mailbox.tls): its address when the DSN says tls=skip-verify or
// tls=preferred, loopback included (mailbox.tls of mode verify does not
// excuse it either: the DSN contradicts it). A DSN that does not parse
// yields nothing: opening the mailbox names that error.
func MailboxUnverified(dsn string, t *v1alpha1.ServerTLS) Unverified {
	u := Unverified{Dependency: "mailbox", OptedIn: optedInUnverified(t), dsn: dsn}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil || !mailboxUnverifiedTLS(cfg.TLSConfig) {
		return u
	}
	u.Setting = "tls=" + cfg.TLSConfig
	u.Addresses = []string{cfg.Addr}
	return u
}

// unverifiedTLS reports whether c is a pgconn TLS configuration that
// checks nothing of the server's certificate (sslmode require, prefer,
// allow); verify-ca checks the chain in VerifyPeerCertificate.
func unverifiedTLS(c *tls.Config) bool {
	return c != nil && c.InsecureSkipVerify && c.VerifyPeerCertificate == nil && c.VerifyConnection == nil
}

// DatabaseUnverified is what a database DSN reaches over unverified TLS
// under t (database.tls): every host pgconn would try with TLS that skips
// verification, loopback hosts and Unix sockets left out. database.tls of
// mode verify replaces the DSN's TLS with verified TLS, so nothing then. A
// DSN that does not parse yields nothing: opening the database names that
// error.
func DatabaseUnverified(dependency, dsn string, t *v1alpha1.ServerTLS) Unverified {
	u := Unverified{Dependency: dependency, OptedIn: optedInUnverified(t), dsn: dsn}
	if enforced(t) {
		return u
	}
	cfg, err := pgconn.ParseConfigWithOptions(dsn, DatabaseParseOptions())
	if err != nil {
		return u
	}
	add := func(host string, port uint16, c *tls.Config) {
		if !unverifiedTLS(c) || strings.HasPrefix(host, "/") || IsLoopback(host) {
			return
		}
		addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if !slices.Contains(u.Addresses, addr) {
			u.Addresses = append(u.Addresses, addr)
		}
	}
	add(cfg.Host, cfg.Port, cfg.TLSConfig)
	for _, fb := range cfg.Fallbacks {
		add(fb.Host, fb.Port, fb.TLSConfig)
	}
	if len(u.Addresses) > 0 {
		u.Setting = "sslmode=" + databaseSSLMode(cfg)
	}
	return u
}

// databaseSSLMode names the sslmode that gave cfg its attempts, for the
// messages (pgconn keeps no copy of it): allow tries plain text first,
// prefer TLS first, require only TLS.
func databaseSSLMode(cfg *pgconn.Config) string {
	// Only the first fallback tells: a later one is another host's.
	if len(cfg.Fallbacks) == 0 || cfg.Fallbacks[0].Host != cfg.Host || cfg.Fallbacks[0].Port != cfg.Port {
		return "require"
	}
	if cfg.TLSConfig == nil {
		return "allow"
	}
	return "prefer"
}

// UnverifiedOf lists what each of the feed's DSNs reaches over unverified
// TLS: the mailbox, the database and, when set, the read database.
func UnverifiedOf(spec *v1alpha1.FlightFeedSpec, s Secrets) []Unverified {
	out := []Unverified{
		MailboxUnverified(s.MailboxDSN, spec.Mailbox.TLS),
		DatabaseUnverified("database", s.DatabaseDSN, spec.Database.TLS),
	}
	if s.ReadDatabaseDSN != "" {
		out = append(out, DatabaseUnverified("read database", s.ReadDatabaseDSN, spec.Database.TLS))
	}
	return out
}

// UnverifiedWarning is the UnverifiedTLSDependency message of a feed: the
// opted-in dependencies reached over unverified TLS, "" when there is
// none.
func UnverifiedWarning(us []Unverified) string {
	var parts, dsns []string
	for _, u := range us {
		if u.OptedIn && len(u.Addresses) > 0 {
			parts = append(parts, u.Dependency+" "+strings.Join(u.Addresses, ", ")+" ("+u.Setting+")")
			dsns = append(dsns, u.dsn)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return RedactError(errors.New("TLS without certificate verification (tls mode: unverified or disable) to "+strings.Join(parts, "; ")+
		": whoever answers at those addresses with any certificate reads the password exchange and the data"), dsns...).Error()
}
