package config

import (
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Every database connection refuses a server's request for the password
// in clear text or as an MD5 hash (DefaultRequireAuth). A DSN may opt back
// in with its own require_auth (libpq's syntax), for a server whose role
// still has an MD5 password; that is allowed but never silent: the feed
// shows the WeakDatabaseAuth warning naming the DSN and the methods, and
// `flightfeed pump --config` logs it.

// WeakAuth is a database DSN whose require_auth lets the client answer a
// request for the password in clear text or as an MD5 hash.
type WeakAuth struct {
	// Dependency is "database" or "read database".
	Dependency string
	// RequireAuth is the DSN's (or $PGREQUIREAUTH's) require_auth.
	RequireAuth string
	// Methods are the weak methods it permits: password, md5.
	Methods []string
}

// weakAuthMethods are the methods whose answer gives the password away:
// password sends it as it is, md5 a hash that can be replayed to the same
// server (salt permitting) and cracked.
var weakAuthMethods = []string{"password", "md5"}

// RequireAuthPermits reports whether a require_auth value (libpq's syntax:
// a list of methods, or of !methods that are then all but those) lets the
// client answer method. "" is DefaultRequireAuth, which permits neither
// password nor md5.
func RequireAuthPermits(requireAuth, method string) bool {
	if requireAuth == "" {
		requireAuth = DefaultRequireAuth
	}
	var listed, negated bool
	for i, part := range strings.Split(requireAuth, ",") {
		part = strings.TrimSpace(part)
		neg := strings.HasPrefix(part, "!")
		if i == 0 {
			negated = neg
		}
		if strings.TrimPrefix(part, "!") == method {
			listed = true
		}
	}
	return listed != negated
}

// DatabaseWeakAuth is the weak authentication a database DSN permits, as
// pgconn parses it (so $PGREQUIREAUTH counts when the DSN names none);
// Methods is empty when it permits none. A DSN that does not parse yields
// nothing: opening the database names that error.
func DatabaseWeakAuth(dependency, dsn string) WeakAuth {
	w := WeakAuth{Dependency: dependency}
	cfg, err := pgconn.ParseConfigWithOptions(dsn, DatabaseParseOptions())
	if err != nil {
		return w
	}
	w.RequireAuth = cfg.RequireAuth
	for _, m := range weakAuthMethods {
		if RequireAuthPermits(cfg.RequireAuth, m) {
			w.Methods = append(w.Methods, m)
		}
	}
	return w
}

// WeakAuthOf lists the weak authentication of the feed's database DSNs:
// the database and, when set, the read database.
func WeakAuthOf(s Secrets) []WeakAuth {
	out := []WeakAuth{DatabaseWeakAuth("database", s.DatabaseDSN)}
	if s.ReadDatabaseDSN != "" {
		out = append(out, DatabaseWeakAuth("read database", s.ReadDatabaseDSN))
	}
	return out
}

// WeakAuthWarning is the WeakDatabaseAuth message of a feed, "" when no
// DSN permits a weak method. It quotes require_auth, which pgconn accepted
// as a list of known method names, and nothing else of the DSN.
func WeakAuthWarning(ws []WeakAuth) string {
	var parts []string
	for _, w := range ws {
		if len(w.Methods) > 0 {
			parts = append(parts, w.Dependency+" require_auth="+w.RequireAuth+" permits "+strings.Join(w.Methods, " and "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + ": a server (or whoever answers at its address) that asks for it gets the password in clear text (password) " +
		"or as a replayable, crackable MD5 hash (md5); move the role to scram-sha-256 and drop require_auth"
}
