package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %s to %s: %v", sig, p.id, err)
	}
}

// Freeze stops the process (SIGSTOP) and waits until every thread of it
// is stopped: from then on it does nothing, not even renew its Leases.
func (p *Proc) Freeze() {
	p.t.Helper()
	p.setFrozen(true)
	p.Signal(syscall.SIGSTOP)
	await.Eventually(p.t, p.id+" to be stopped", WaitLong, func() (bool, string) {
		states, err := threadStates(p.cmd.Process.Pid)
		if err != nil {
			return false, err.Error()
		}
		return strings.Trim(states, "tT") == "", "thread states " + states
	})
}

// Thaw resumes a frozen process (SIGCONT).
func (p *Proc) Thaw() {
	p.t.Helper()
	p.Signal(syscall.SIGCONT)
	p.setFrozen(false)
}

func (p *Proc) setFrozen(v bool) {
	p.mu.Lock()
	p.frozen = v
	p.mu.Unlock()
}

// Stop ends the process the way Kubernetes does: SIGCONT when frozen,
// SIGTERM, then SIGKILL after a grace period of 30 s (a process that
// needs it fails the test).
func (p *Proc) Stop() {
	if p.Exited() {
		return
	}
	p.mu.Lock()
	frozen := p.frozen
	p.mu.Unlock()
	if frozen {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if !p.WaitFor(30 * time.Second) {
		p.t.Errorf("%s did not stop on SIGTERM", p.id)
		p.kill()
	}
}

// threadStates is the scheduler state letter of every thread of pid.
func threadStates(pid int) (string, error) {
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil {
		return "", fmt.Errorf("threads of %d: %w", pid, err)
	}
	if len(files) == 0 {
		return "", fmt.Errorf("no threads of %d", pid)
	}
	var b strings.Builder
	for _, f := range files {
		raw, err := os.ReadFile(f) //nolint:gosec // G304: /proc of the test's own child
		if err != nil {
			return "", err
		}
		// "pid (comm) S ...": the state follows the last ')'.
		s := string(raw)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) {
			return "", fmt.Errorf("%s: %q", f, s)
		}
		b.WriteByte(s[i+2])
	}
	return b.String(), nil
}
