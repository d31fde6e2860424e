package config

import (
	"errors"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Credentials reach messages by two routes: our own messages quote a DSN or
// a broker entry, and the drivers' messages quote what they parsed out of
// one. A DSN whose password holds an unescaped '@' or '/' is split by libpq
// and pgx at the first '@', so the password's tail becomes the "host" or
// "database" and is printed as such. RedactDSN covers the first route;
// RedactError covers the second, and CheckDatabaseDSN refuses the DSNs that
// a driver would mis-split before any driver sees them.

// redacted stands for hidden credentials.
const redacted = "***"

var (
	// uriScheme is a URI's scheme with its "//" ("postgres://"): kept, since
	// it says which kind of DSN it is and holds nothing secret.
	uriScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)
	// passwordSetting is a password in keyword/value form or a URI query:
	// "password=s3cret", "password='s3 cret'", "?password=s3cret&...". The
	// first group keeps what precedes the value.
	passwordSetting = regexp.MustCompile(`(?i)((?:^|[\s?&])(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&]*)`)
)

// RedactDSN returns a DSN, connection URI or broker entry with its
// credentials hidden, for messages and logs: everything before the last '@'
// becomes *** (a URI keeps its scheme), and every password setting shows
// password=***. Hiding up to the last '@' is safe however the password was
// written: a password cannot lie after the last '@'.
//
//	postgres://app:s3@cret@db:5432/ff  ->  postgres://***@db:5432/ff
//	app:s3cret@tcp(mysql:3306)/mbx     ->  ***@tcp(mysql:3306)/mbx
//	host=db password='s3 cret'         ->  host=db password=***
func RedactDSN(s string) string {
	scheme := uriScheme.FindString(s)
	rest := s[len(scheme):]
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = redacted + rest[i:]
	}
	return scheme + passwordSetting.ReplaceAllString(rest, "${1}"+redacted)
}

// RedactError returns err with the credentials of every given DSN removed
// from its text, however a driver split or quoted them; errors.Is and
// errors.As still see err. Wrap a driver's error with it before adding it
// to a message.
func RedactError(err error, dsns ...string) error {
	if err == nil {
		return nil
	}
	var secrets []string
	for _, dsn := range dsns {
		secrets = append(secrets, secretsOf(dsn)...)
	}
	text := err.Error()
	clean := scrub(text, secrets)
	if clean == text {
		return err
	}
	return &redactedError{text: clean, err: err}
}

// redactedError shows a cleaned text and unwraps to the original, so
// classification (errors.Is(err, context.DeadlineExceeded), *pgconn.PgError)
// keeps working.
type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// scrub replaces every secret in text, longest first, so a short secret
// cannot break up a longer one before it is replaced.
func scrub(text string, secrets []string) string {
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, s := range secrets {
		text = strings.ReplaceAll(text, s, redacted)
	}
	return text
}

// minFragment is the shortest piece of a password scrubbed on its own: a
// shorter one would blot out ordinary words of the message while hiding
// next to nothing.
const minFragment = 3

// secretsOf lists what of dsn must never be printed: the user information
// (everything between the scheme and the last '@') when it holds a
// password, that password, every
// password setting, and the pieces a driver may have split a password
// into at an '@', '/', ':' or '?' (what follows the split lands in the
// host, port or database name). Percent-decoded forms are included, since
// drivers print decoded values.
func secretsOf(dsn string) []string {
	var out []string
	add := func(s string) {
		for _, v := range []string{s, unescape(s)} {
			if len(v) >= minFragment {
				out = append(out, v)
			}
		}
	}
	rest := dsn[len(uriScheme.FindString(dsn)):]
	// Without a ':' the user information is a user name alone: nothing
	// secret, and scrubbing it would only blot out "user=postgres".
	if i := strings.LastIndexByte(rest, '@'); i > 0 {
		if _, password, ok := strings.Cut(rest[:i], ":"); ok {
			add(rest[:i])
			addPieces(password, add)
		}
	}
	for _, m := range passwordSetting.FindAllStringSubmatch(dsn, -1) {
		addPieces(strings.Trim(m[2], "'"), add)
	}
	return out
}

// addPieces adds password and every prefix and suffix of it that ends or
// starts at a character a driver splits on.
func addPieces(password string, add func(string)) {
	add(password)
	for i := 0; i < len(password); i++ {
		if strings.IndexByte("@/:?#", password[i]) >= 0 {
			add(password[:i])
			add(password[i+1:])
		}
	}
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// ErrAmbiguousDSN means a database URI would be split differently from how
// it was meant: its password holds an unescaped '@' or '/'.
var ErrAmbiguousDSN = errors.New("the user or password holds an unescaped '@' or '/'; percent-encode them (@ as %40, / as %2F)")

// CheckDatabaseDSN refuses a PostgreSQL connection URI that libpq and pgx
// would split at the wrong '@' or '/' (bad configuration is named,
// not discovered as a strange host), a key outside DatabaseKeys (naming
// it), and a set FileEnvironment variable (dsnpolicy.go). The error holds
// no part of the DSN but a refused key's name.
func CheckDatabaseDSN(dsn string) error {
	if err := checkAmbiguousURI(dsn); err != nil {
		return err
	}
	if err := checkDatabaseKeys(dsn); err != nil {
		return err
	}
	return CheckDatabaseEnvironment()
}

func checkAmbiguousURI(dsn string) error {
	rest, ok := strings.CutPrefix(dsn, "postgres://")
	if !ok {
		if rest, ok = strings.CutPrefix(dsn, "postgresql://"); !ok {
			return nil
		}
	}
	// libpq: the authority ends at the first '/'; the path, up to '?', is
	// the database name.
	authority, path, _ := strings.Cut(rest, "/")
	path, _, _ = strings.Cut(path, "?")
	if strings.Count(authority, "@") > 1 || strings.Contains(path, "@") {
		return ErrAmbiguousDSN
	}
	return nil
}
