// Command pause is the sandbox ("pause") container of the local cluster's
// pods (hack/cluster): it holds the pod's namespaces and does nothing until
// it is told to stop. A static Go stand-in for registry.k8s.io/pause, which
// cannot be pulled here.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	// As PID 1 of its namespace it would also reap orphans; containers of a
	// pod run in their own PID namespaces here, so there are none to reap.
	signal.Ignore(syscall.SIGCHLD)
	<-stop
}
