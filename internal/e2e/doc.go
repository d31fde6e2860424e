// Package e2e owns the end-to-end tests of the operator as it ships: the
// flightfeed binary is built once and run as separate `flightfeed manager`
// processes against an envtest control plane, real PostgreSQL and MariaDB
// databases and a kfake Kafka broker. The tests kill, freeze and resume
// whole processes (SIGKILL, SIGSTOP, SIGCONT) to check the single-active-pump
// guarantee of docs/architecture.md: one pump per feed at a time, takeover after a lost
// holder, a paused ex-holder that cannot commit, feeds led by different
// replicas. The package holds tests only; it must not be imported.
package e2e
