package cli

import (
	"fmt"
	stdlog "log"
	"os"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/go-sql-driver/mysql"
)

// mysqlLog is the logger the MySQL driver's lines go to, set by each
// command (newLogger). The driver keeps its logger in one package
// variable that every mysql.ParseDSN reads, so it is set once, here,
// before any goroutine can parse a DSN: setting it per command raced with
// the DSN checks of a manager running in the same process (tests run both).
var mysqlLog atomic.Pointer[logr.Logger]

func init() {
	_ = mysql.SetLogger(commandMySQLLogger{}) // fails only for nil
}

// driverDefault is where the driver's lines go before a command set
// mysqlLog: the driver's own default.
var driverDefault = stdlog.New(os.Stderr, "[mysql] ", stdlog.Ldate|stdlog.Ltime|stdlog.Lshortfile)

// commandMySQLLogger forwards the driver's lines to mysqlLog.
type commandMySQLLogger struct{}

// Print implements mysql.Logger.
func (commandMySQLLogger) Print(v ...any) {
	if l := mysqlLog.Load(); l != nil {
		mysqlLogger{log: *l}.Print(v...)
		return
	}
	driverDefault.Print(v...)
}

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
