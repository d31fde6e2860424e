package proctest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// WaitLong bounds every wait of a Proc that has no tighter bound of its
// own. Waits are polls with deadlines, never assertions on how long
// something took.
const WaitLong = 3 * time.Minute

// Poll is how often a Proc's waits look.
const Poll = 25 * time.Millisecond

// Spec is one process to Start.
type Spec struct {
	// ID names the process in messages and is its PostgreSQL sessions'
	// application_name (PGAPPNAME, which pgx reads): the write audit and
	// pg_stat_activity tell the processes apart by it.
	ID string
	// Args are the binary's arguments: "manager", "--kubeconfig", K, ….
	Args []string
	// Env is added to the test process's environment.
	Env []string
	// Cgroup, when set, is a memory cgroup (MemoryCgroup) the process runs
	// in from its first instruction, as a pod under its memory limit; its
	// soft memory limit then comes from the cgroup's (GOMEMLIMIT unset).
	Cgroup string
	// KillAtEnd ends a process still running when the test ends with
	// SIGKILL (a drain whose result no longer matters); otherwise it is
	// stopped as Kubernetes stops a pod (Stop).
	KillAtEnd bool
}

// Proc is one process of the built binary that a test started: its
// output is collected (FLIGHTFEED_TEST_LOG=1 streams it too), a failed
// test shows its last lines, and it is ended when the test ends.
type Proc struct {
	t    testing.TB
	id   string
	cmd  *exec.Cmd
	out  *Output
	done chan struct{}
	// ended is set, and err is the exit status, once done is closed.
	ended atomic.Bool
	err   error

	mu     sync.Mutex
	frozen bool
}

// Start runs binary with spec's arguments in the background.
func Start(t testing.TB, binary string, spec Spec) *Proc {
	t.Helper()
	p := &Proc{t: t, id: spec.ID, out: &Output{}, done: make(chan struct{})}
	argv := append([]string{binary}, spec.Args...)
	env := append(os.Environ(), spec.Env...)
	if spec.ID != "" {
		env = append(env, "PGAPPNAME="+spec.ID)
	}
	if spec.Cgroup != "" {
		argv = InCgroup(spec.Cgroup, argv...)
		env = WithoutEnv(env, "GOMEMLIMIT")
	}
	// Ended by the harness (Stop, Kill, the test's end), not by a context.
	p.cmd = exec.CommandContext(context.Background(), argv[0], argv[1:]...) //nolint:gosec // the test's own binary and arguments
	p.cmd.Env = env
	var sink io.Writer = p.out
	if os.Getenv("FLIGHTFEED_TEST_LOG") != "" {
		sink = io.MultiWriter(p.out, Prefixed(t.Name()+" "+spec.ID+": "))
	}
	p.cmd.Stdout, p.cmd.Stderr = sink, sink
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", spec.ID, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.ended.Store(true)
		close(p.done)
	}()
	t.Cleanup(func() {
		if spec.KillAtEnd {
			p.kill()
		} else {
			p.Stop()
		}
		if t.Failed() {
			t.Logf("--- log of %s (pid %d, %v), last lines\n%s", p.id, p.cmd.Process.Pid, p.err, Tail(p.out.String(), 100))
		}
	})
	return p
}

// ID is the process's identity (Spec.ID).
func (p *Proc) ID() string { return p.id }

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool { return p.ended.Load() }

// Err is the process's exit status once it has ended (nil before).
func (p *Proc) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Done is closed when the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// WaitFor waits at most d for the process to end and reports whether it did.
func (p *Proc) WaitFor(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// Wait waits for the process to end (WaitLong at most; longer fails the
// test) and returns its exit status.
func (p *Proc) Wait() error {
	p.t.Helper()
	if !p.WaitFor(WaitLong) {
		p.t.Fatalf("%s did not end within %s\n%s", p.id, WaitLong, Tail(p.out.String(), 40))
	}
	return p.err
}

// Finish waits for the process to end and requires exit status 0 (a
// `pump --drain` that drained).
func (p *Proc) Finish() {
	p.t.Helper()
	if err := p.Wait(); err != nil {
		p.t.Fatalf("%s failed: %v\n%s", p.id, err, Tail(p.out.String(), 40))
	}
}

// Kill ends the process with SIGKILL (no clean-up: its Leases stay held
// until they expire, its connections drop) and waits for it.
func (p *Proc) Kill() {
	p.t.Helper()
	p.Signal(syscall.SIGKILL)
	p.setFrozen(false)
	if !p.WaitFor(WaitLong) {
		p.t.Fatalf("%s did not die of SIGKILL", p.id)
	}
}

func (p *Proc) kill() {
	if !p.Exited() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Output is everything the process wrote so far.
func (p *Proc) Output() string { return p.out.String() }

// Logs returns the process's JSON log lines whose message is msg (every
// JSON line when msg is empty).
func (p *Proc) Logs(msg string) []LogLine { return LogLines(p.out.String(), msg) }

// WaitLog waits until the process logged a line with message msg (any
// when empty) that match accepts, and returns it; a process that ends
// first fails the test.
func (p *Proc) WaitLog(what, msg string, match func(LogLine) bool) LogLine {
	p.t.Helper()
	var got LogLine
	await.EventuallyEvery(p.t, p.id+": "+what, WaitLong, Poll, func() (bool, string) {
		for _, l := range p.Logs(msg) {
			if match(l) {
				got = l
				return true, ""
			}
		}
		if p.Exited() {
			p.t.Fatalf("%s exited (%v) before logging %s\n%s", p.id, p.err, what, Tail(p.out.String(), 40))
		}
		return false, fmt.Sprintf("%d lines logged", len(p.Logs("")))
	})
	return got
}

// WaitReady waits until the process's health probe at addr answers
// /readyz with 200; a process that ends first fails the test.
func (p *Proc) WaitReady(addr string) {
	p.t.Helper()
	await.Eventually(p.t, p.id+" to be ready", WaitLong, func() (bool, string) {
		if p.Exited() {
			p.t.Fatalf("%s exited: %v\n%s", p.id, p.err, Tail(p.out.String(), 40))
		}
		code, body := HTTPGet(nil, "http://"+addr+"/readyz")
		return code == http.StatusOK, fmt.Sprint(code, " ", body)
	})
}
