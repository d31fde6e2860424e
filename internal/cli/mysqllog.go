package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/go-logr/logr"
)

// mysqlLogger routes the MySQL driver's own log lines ("packets.go:58
// unexpected EOF", "closing bad idle connection") into the structured
// log. Left to its default, the driver prints them as plain text with a
// "[mysql]" prefix on stderr, between JSON lines, where log collectors
// cannot parse them or tell which feed they belong to.
//
// They are logged at info level: the driver writes them when it drops a
// connection that database/sql then replaces, and the operation that
// really fails returns its error to our code, which logs it as an error.
type mysqlLogger struct{ log logr.Logger }

// driverSource is the "file.go:line " the driver puts before its message.
var driverSource = regexp.MustCompile(`^\S+\.go:\d+ $`)

// Print implements mysql.Logger.
func (l mysqlLogger) Print(v ...any) {
	var kv []any
	if len(v) > 0 {
		if s, ok := v[0].(string); ok && driverSource.MatchString(s) {
			kv = append(kv, "source", strings.TrimSpace(s))
			v = v[1:]
		}
	}
	kv = append(kv, "error", strings.TrimSpace(fmt.Sprint(v...)))
	l.log.Info("mysql driver", kv...)
}
