// Package proctest is the one harness of the tests that run the built
// flightfeed binary (internal/e2e, internal/reliability, hack/cluster/e2e):
// it builds it from the repository's main.go (Build; BuildTagged with
// build tags such as "reliability"; Binary into the test's temporary
// directory; Main, a TestMain that also starts one control plane), starts
// its processes (Start: `flightfeed manager ...`, `flightfeed pump --feed
// NS/NAME --kubeconfig K`, `pump --config F --drain`) and ends them with the
// test (Proc: kill, freeze, thaw, stop, readiness, logs), collects a
// process's output (Output), copies it to the test's stderr line by line
// (Prefixed) and shows its last lines in a failure (Tail). A World is one
// feed on fresh services (database, mailbox, broker, --config) with what
// the tests read of it: processed rows, pipeline_lock, the write audit of
// fenced writes (InstallAudit), the simulator's workload.
package proctest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Build builds the repository's main.go into dir/flightfeed and returns
// its path.
func Build(dir string) (string, error) { return BuildTagged(dir) }

// BuildTagged is Build with build tags: "reliability" compiles the fail
// points in (internal/failpoint).
func BuildTagged(dir string, tags ...string) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("proctest: cannot locate the repository")
	}
	bin := filepath.Join(dir, "flightfeed")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	// Bounded by the test binary's own timeout, like everything it runs.
	cmd := exec.CommandContext(context.Background(), "go", append(args, ".")...) //nolint:gosec // the test's own output path
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build flightfeed: %w\n%s", err, out)
	}
	return bin, nil
}

// Binary builds the binary into the test's temporary directory (Build)
// and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BinaryTagged is Binary built with build tags (BuildTagged).
func BinaryTagged(t testing.TB, tags ...string) string {
	t.Helper()
	bin, err := BuildTagged(t.TempDir(), tags...)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Output collects a process's output; safe for concurrent use.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// Prefixed copies what is written to the test process's stderr, each line
// after prefix.
func Prefixed(prefix string) io.Writer { return prefixWriter{prefix} }

type prefixWriter struct{ prefix string }

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line != "" {
			fmt.Fprint(os.Stderr, p.prefix+line)
		}
	}
	return len(b), nil
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogLine is one JSON line of a process's structured (zap) log.
type LogLine map[string]any

// Str is the line's field k as a string ("" when absent or not a string).
func (l LogLine) Str(k string) string {
	s, _ := l[k].(string)
	return s
}

// LogLines returns the JSON lines of out whose message is msg (every JSON
// line when msg is empty); other lines are skipped.
func LogLines(out, msg string) []LogLine {
	var lines []LogLine
	for _, raw := range strings.Split(out, "\n") {
		var l LogLine
		if json.Unmarshal([]byte(raw), &l) != nil {
			continue
		}
		if msg == "" || l.Str("msg") == msg {
			lines = append(lines, l)
		}
	}
	return lines
}
