// Package faults owns the fault regression tests of `flightfeed pump
// --drain` as it ships: the binary is built once and run against real
// PostgreSQL and MariaDB databases and a kfake Kafka broker, and a fault is
// injected in the middle of the drain — the pump killed with SIGKILL, its
// PostgreSQL backends terminated, its MariaDB connections killed, the
// broker down for twenty seconds. Each faulted drain must end exactly where
// a clean drain of the same rows ends: the export, the ledger, the
// mailbox results and what an independent consumer reads from both topics.
//
// It is a package of its own, beside internal/e2e, because it needs no
// Kubernetes control plane. The package holds tests only; it must not be
// imported.
package faults
