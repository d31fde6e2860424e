package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// A DSN comes from a Secret that whoever may write the FlightFeed's
// namespace controls, and some driver options turn it into a way to read
// this process's files or to weaken its connections: go-sql-driver/mysql
// with allowAllFiles=true sends any local file (the pod's service-account
// token) to a server that answers a query with LOAD DATA LOCAL INFILE, and
// pgconn reads passfile, servicefile, sslkey, sslcert and sslrootcert from
// the local file system. The mailbox DSN must name a TCP address, may
// hold only the options of MailboxOptions, is refused the dangerous flags
// when they are on, and then has them forced off; the database DSN is checked against an allow list of keys, which
// fails closed for keys a later pgx release learns. docs/security.md,
// "What each DSN option does", has the table.

// mailboxRule is one mailbox DSN option that is refused when set.
type mailboxRule struct {
	option string
	set    func(*mysql.Config) bool
	why    string
}

var mailboxRefused = []mailboxRule{
	{"allowAllFiles=true", func(c *mysql.Config) bool { return c.AllowAllFiles },
		"it lets the mailbox server read any local file of this process (LOAD DATA LOCAL INFILE)"},
	{"allowCleartextPasswords=true", func(c *mysql.Config) bool { return c.AllowCleartextPasswords },
		"it sends the password in clear text to a server that asks for it"},
	{"allowOldPasswords=true", func(c *mysql.Config) bool { return c.AllowOldPasswords },
		"it answers with the broken pre-4.1 password hash"},
	{"allowFallbackToPlaintext=true", func(c *mysql.Config) bool { return c.AllowFallbackToPlaintext },
		"it goes on without TLS when the server does not offer it"},
	{"multiStatements=true", func(c *mysql.Config) bool { return c.MultiStatements },
		"it lets one statement text carry several statements; FlightFeed never sends more than one"},
}

// MailboxTLSValues are the values of the mailbox DSN's tls option that are
// accepted; the TLS of a private CA or a client certificate is given in
// mailbox.tls, not by a registered name. skip-verify and preferred (no
// certificate check) are accepted only with the opt-in (mailbox.tls mode
// unverified or disable).
var MailboxTLSValues = []string{"", "false", "true"}

// MailboxConfig parses a go-sql-driver/mysql DSN, refuses the options that
// would let the server read local files or weaken the connection, and
// forces those flags off in what it returns (so a later change of the
// parser cannot turn them back on). tls=skip-verify and tls=preferred are
// refused (errors.Is ErrUnverifiedTLS) unless t (mailbox.tls) opts in to
// unverified TLS; tls=preferred then loses its plain-text fallback (the
// driver's allowFallbackToPlaintext, forced off like the others). Its
// errors quote no part of the DSN but the option they refuse.
func MailboxConfig(dsn string, t *v1alpha1.ServerTLS) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, RedactError(err, dsn)
	}
	switch {
	case mailboxUnverifiedTLS(cfg.TLSConfig) && !optedInUnverified(t):
		return nil, &unverifiedError{msg: fmt.Sprintf("option tls=%s is refused: it accepts any server certificate, so whoever answers at the mailbox's address reads the password exchange and the data "+
			"(use tls=true, and mailbox.tls for a private CA; or opt in to unverified TLS with mailbox.tls: {mode: unverified})", cfg.TLSConfig)}
	case mailboxUnverifiedTLS(cfg.TLSConfig):
		// The driver turns tls=preferred into allowFallbackToPlaintext; only
		// the DSN's own allowFallbackToPlaintext=true is refused below.
		cfg.AllowFallbackToPlaintext = mailboxOptionTrue(dsn, "allowFallbackToPlaintext")
	case !slices.Contains(MailboxTLSValues, cfg.TLSConfig):
		return nil, errors.New("option tls=<name> is refused: only tls=true or tls=false (give a private CA or a client certificate in mailbox.tls)")
	}
	for _, r := range mailboxRefused {
		if r.set(cfg) {
			return nil, fmt.Errorf("option %s is refused: %s", r.option, r.why)
		}
	}
	if cfg.Net != "tcp" && cfg.Net != "tcp6" && cfg.Net != "tcp4" {
		return nil, fmt.Errorf("address %s(…) is refused: the mailbox is reached over TCP, tcp(host:port); a socket or another transport of this pod is not a mailbox server", cfg.Net)
	}
	for _, key := range mailboxOptionKeys(dsn) {
		if !slices.Contains(MailboxOptions, key) {
			return nil, fmt.Errorf("option %q is refused: the mailbox DSN takes only %s (anything else would be sent to the server as a session variable or change the driver in ways FlightFeed does not check)",
				key, strings.Join(MailboxOptions, ", "))
		}
	}
	cfg.AllowAllFiles = false
	cfg.AllowCleartextPasswords = false
	cfg.AllowOldPasswords = false
	cfg.AllowFallbackToPlaintext = false
	cfg.MultiStatements = false
	return cfg, nil
}

// MailboxOptions are the options a mailbox DSN may set, an allow list like
// the database's: timeouts, TLS (tls=true|false), how values are read and
// sent, and the refused flags themselves (=false is accepted). Any other
// key is refused, so an option a later driver learns, or a server session
// variable (the driver sends unknown keys as SET), never reaches the
// connection unchecked.
var MailboxOptions = []string{
	"tls", "timeout", "readTimeout", "writeTimeout", "parseTime", "loc", "charset", "collation",
	"interpolateParams", "maxAllowedPacket", "rejectReadOnly", "checkConnLiveness", "clientFoundRows",
	"columnsWithAlias", "allowNativePasswords",
	"allowAllFiles", "allowCleartextPasswords", "allowOldPasswords", "allowFallbackToPlaintext", "multiStatements",
}

// mailboxOptionKeys are the option keys of a mailbox DSN, in order: the
// query after the database name, which follows the last slash (a password
// may hold '?' or '/' only before the '@' that precedes the address).
func mailboxOptionKeys(dsn string) []string {
	var keys []string
	for _, kv := range mailboxOptions(dsn) {
		key, _, _ := strings.Cut(kv, "=")
		keys = append(keys, key)
	}
	return keys
}

// mailboxOptions are the key=value options of a mailbox DSN, in order (see
// mailboxOptionKeys).
func mailboxOptions(dsn string) []string {
	rest := dsn[strings.LastIndex(dsn, "/")+1:]
	_, query, ok := strings.Cut(rest, "?")
	if !ok || query == "" {
		return nil
	}
	return strings.Split(query, "&")
}

// mailboxOptionTrue reports whether the mailbox DSN sets the boolean
// option key to true, as the driver reads it (the last one wins; 1, true,
// TRUE, True).
func mailboxOptionTrue(dsn, key string) bool {
	on := false
	for _, kv := range mailboxOptions(dsn) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			on = v == "1" || v == "true" || v == "TRUE" || v == "True"
		}
	}
	return on
}

// CheckMailboxDSN reports an option MailboxConfig refuses in dsn under t
// (mailbox.tls). A DSN the driver cannot parse at all passes here: opening
// the mailbox names that error, as it always did.
func CheckMailboxDSN(dsn string, t *v1alpha1.ServerTLS) error {
	if _, err := mysql.ParseDSN(dsn); err != nil {
		return nil //nolint:nilerr // the parse error is Open's to name
	}
	_, err := MailboxConfig(dsn, t)
	return err
}

// DatabaseKeys are the connection-string keys a database DSN may hold:
// where and as whom to connect, sslmode, how to authenticate
// (require_auth; channel_binding=require insists on SCRAM-SHA-256-PLUS, the
// SCRAM exchange bound to the TLS channel, so a server that cannot prove
// it holds the certificate's key fails the login), and the session
// settings the store itself knows. Every other key is refused, including
// those that make pgconn read a local file (fileKeys).
var DatabaseKeys = []string{
	"host", "port", "dbname", "user", "password", "sslmode", "sslsni",
	"connect_timeout", "target_session_attrs", "application_name",
	"statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout",
	"tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count",
	"require_auth", "channel_binding",
}

// DefaultRequireAuth is the require_auth of every database connection
// whose DSN (or $PGREQUIREAUTH) names none: the client never answers a
// server that asks for the password in clear text (password) or as an MD5
// hash (md5, replayable and crackable), so a server or anything at its
// address cannot collect it that way; SCRAM, certificates and trust work.
// A DSN opts in with its own require_auth (libpq's syntax), e.g.
// require_auth=scram-sha-256,md5.
const DefaultRequireAuth = "!password,!md5"

// fileKeys are the database DSN keys that make pgconn read a local file.
var fileKeys = map[string]bool{
	"passfile": true, "service": true, "servicefile": true,
	"sslkey": true, "sslcert": true, "sslrootcert": true, "sslpassword": true,
}

// FileEnvironment are the libpq environment variables that make pgconn
// read a local file (PGSERVICE selects an entry of one). The process
// refuses to open a database while one is set.
var FileEnvironment = []string{"PGPASSFILE", "PGSERVICE", "PGSERVICEFILE", "PGSSLCERT", "PGSSLKEY", "PGSSLROOTCERT", "PGSSLPASSWORD"}

// DatabaseParseOptions are the pgconn options every database DSN is
// parsed with: pgconn itself refuses a key outside DatabaseKeys before it
// touches the file system.
func DatabaseParseOptions() pgconn.ParseConfigOptions {
	return pgconn.ParseConfigOptions{ConnStringAllowedKeys: slices.Clone(DatabaseKeys)}
}

// checkDatabaseKeys refuses a key outside DatabaseKeys, naming it.
func checkDatabaseKeys(dsn string) error {
	keys, err := databaseKeys(dsn)
	if err != nil {
		// Malformed: pgconn reports it when the DSN is parsed.
		return nil //nolint:nilerr // the parse error is the driver's to name
	}
	for _, k := range keys {
		if k == "database" {
			k = "dbname"
		}
		if slices.Contains(DatabaseKeys, k) {
			continue
		}
		if fileKeys[k] {
			return fmt.Errorf("key %q is refused: it makes the driver read a local file (give TLS material in database.tls)", k)
		}
		return fmt.Errorf("key %q is refused: a database DSN may hold only %s", k, strings.Join(DatabaseKeys, ", "))
	}
	return nil
}

// CheckDatabaseEnvironment refuses a set FileEnvironment variable.
func CheckDatabaseEnvironment() error {
	for _, name := range FileEnvironment {
		if v, ok := os.LookupEnv(name); ok && v != "" {
			return fmt.Errorf("environment variable %s is set: FlightFeed reads no file a libpq environment variable names (unset it; give TLS material in database.tls)", name)
		}
	}
	return nil
}

// databaseKeys lists the keys of a connection URI's query or of a
// keyword/value string as libpq and pgconn split them.
func databaseKeys(dsn string) ([]string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return uriKeys(dsn)
	}
	var keys []string
	s := dsn
	for {
		s = strings.TrimLeft(s, " \t\n\r\v\f")
		if s == "" {
			return keys, nil
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, errors.New("keyword without value")
		}
		keys = append(keys, strings.TrimSpace(s[:eq]))
		s = strings.TrimLeft(s[eq+1:], " \t\n\r\v\f")
		if strings.HasPrefix(s, "'") {
			// Quoted: up to the next unescaped quote.
			i := 1
			for ; i < len(s); i++ {
				if s[i] == '\\' {
					i++
					continue
				}
				if s[i] == '\'' {
					break
				}
			}
			if i >= len(s) {
				return nil, errors.New("unterminated quoted value")
			}
			s = s[i+1:]
			continue
		}
		i := 0
		for ; i < len(s) && !strings.ContainsRune(" \t\n\r\v\f", rune(s[i])); i++ {
			if s[i] == '\\' {
				i++
			}
		}
		if i > len(s) {
			i = len(s)
		}
		s = s[i:]
	}
}

// uriKeys lists the query keys of a connection URI as pgconn's parser
// (libpq's conninfo_uri_parse) finds them, not as net/url does: the user
// information ends at the first '@' before any '/' (so a '?' or '#' in a
// password is not a query), the host list at '/' or '?', the query at the
// end of the string ('#' is no fragment), and ';' separates nothing. A key
// is percent-decoded with its surrounding spaces dropped; one that does
// not decode is kept as written, which no allowed key is.
func uriKeys(dsn string) ([]string, error) {
	p, ok := strings.CutPrefix(dsn, "postgresql://")
	if !ok {
		p, _ = strings.CutPrefix(dsn, "postgres://")
	}
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		p = p[i+1:]
	}
	for {
		if strings.HasPrefix(p, "[") {
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, errors.New("unterminated IPv6 address")
			}
			p = p[end+1:]
		} else {
			i := strings.IndexAny(p, ":/?,")
			if i < 0 {
				i = len(p)
			}
			p = p[i:]
		}
		if strings.HasPrefix(p, ":") {
			i := strings.IndexAny(p, "/?,")
			if i < 0 {
				i = len(p)
			}
			p = p[i:]
		}
		if !strings.HasPrefix(p, ",") {
			break
		}
		p = p[1:]
	}
	if rest, ok := strings.CutPrefix(p, "/"); ok {
		p = ""
		if i := strings.IndexByte(rest, '?'); i >= 0 {
			p = rest[i:]
		}
	}
	query, ok := strings.CutPrefix(p, "?")
	if !ok {
		return nil, nil
	}
	var keys []string
	// pgconn's loop: a '&' at the very end leaves no pair behind it.
	for query != "" {
		pair := query
		if i := strings.IndexByte(query, '&'); i >= 0 {
			pair, query = query[:i], query[i+1:]
		} else {
			query = ""
		}
		raw, _, found := strings.Cut(pair, "=")
		if !found {
			return nil, errors.New("query parameter without '='")
		}
		key, err := url.PathUnescape(strings.Trim(raw, " "))
		if err != nil {
			key = raw
		}
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}
