package cli

import (
	"flag"
	"io"
	"sync"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// logFlags gives cmd controller-runtime's zap flags (--zap-log-level,
// --zap-devel, --zap-encoder, --zap-stacktrace-level, --zap-time-encoding),
// so an operator can switch on the V-levels the code logs at
// (--zap-log-level=2 shows each delivered event). Values are checked when
// the command line is parsed; a bad one is a usage error.
func logFlags(cmd *cobra.Command) {
	cmd.Flags().AddGoFlagSet(zapFlagSet(&zap.Options{}))
}

func zapFlagSet(opts *zap.Options) *flag.FlagSet {
	fs := flag.NewFlagSet("zap", flag.ContinueOnError)
	opts.BindFlags(fs)
	return fs
}

// newLogger writes logs to stderr: JSON at info level unless the command's
// zap flags say otherwise. The pump and the dispatcher log from their own
// goroutines, so writes are serialised here: the command's writer need not
// be safe for concurrent use. The MySQL driver's own lines go to the same
// log (see mysqlLogger).
func newLogger(cmd *cobra.Command) logr.Logger {
	log := zap.New(zap.UseFlagOptions(commandLogOptions(cmd.Flags())), zap.WriteTo(&lockedWriter{w: cmd.ErrOrStderr()}))
	log = logr.New(capVerbosity{LogSink: log.GetSink()})
	driverLog := log.WithName("mysql")
	mysqlLog.Store(&driverLog)
	return log
}

// MaxVerbosity is the most verbose V-level any command logs, whatever
// --zap-log-level says. client-go logs through the logger of the request's
// context: request and response bodies from V(8) (a Secret's data among
// them, so every feed's credentials), request headers from V(7). Our own
// code logs at V(2) at most.
const MaxVerbosity = 6

// capVerbosity drops messages above MaxVerbosity.
type capVerbosity struct{ logr.LogSink }

func (c capVerbosity) Enabled(level int) bool {
	return level <= MaxVerbosity && c.LogSink.Enabled(level)
}

func (c capVerbosity) Info(level int, msg string, kv ...any) {
	if level <= MaxVerbosity {
		c.LogSink.Info(level, msg, kv...)
	}
}

func (c capVerbosity) WithValues(kv ...any) logr.LogSink {
	return capVerbosity{c.LogSink.WithValues(kv...)}
}

func (c capVerbosity) WithName(name string) logr.LogSink {
	return capVerbosity{c.LogSink.WithName(name)}
}

// commandLogOptions reads the zap flags the command line set. The flags'
// values were checked at parse time, so setting them again cannot fail;
// a command without the flags gets the defaults (JSON, info).
func commandLogOptions(flags *pflag.FlagSet) *zap.Options {
	opts := &zap.Options{}
	fs := zapFlagSet(opts)
	fs.VisitAll(func(f *flag.Flag) {
		if pf := flags.Lookup(f.Name); pf != nil && pf.Changed {
			_ = fs.Set(f.Name, pf.Value.String())
		}
	})
	return opts
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
