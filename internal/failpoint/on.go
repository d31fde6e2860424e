//go:build reliability

package failpoint

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
)

// Enabled reports whether the binary was built with the `reliability`
// tag, which compiles the fail points in.
const Enabled = true

// armed is read from Env once, at start; hits counts each armed point's
// hits. Points not armed are not counted.
var (
	armed Arming
	hits  = map[string]*atomic.Int64{}
)

func init() {
	a, err := Parse(os.Getenv(Env))
	if err != nil {
		fmt.Fprintf(os.Stderr, "failpoint: %v\n", err)
		os.Exit(2)
	}
	armed = a
	for name := range a {
		hits[name] = new(atomic.Int64)
	}
}

// Hit counts a hit of the point name when it is armed and, at the armed
// hit, crashes the process: one line to standard error, then SIGKILL to
// itself (no deferred function or cleanup runs).
func Hit(name string) {
	c, ok := hits[name]
	if !ok {
		return
	}
	n := c.Add(1)
	if n != int64(armed[name]) {
		return
	}
	fmt.Fprintf(os.Stderr, "failpoint: %s hit %d: crashing\n", name, n)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way; nothing else may run meanwhile
}
