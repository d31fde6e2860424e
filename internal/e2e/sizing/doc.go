// Package sizing owns the memory test of `flightfeed pump --drain` as it
// ships: the built binary runs inside a memory cgroup of the chart's
// default limit (512 MiB) through the largest messages the decoder admits
// and a backlog of full-day DNLDs, and must drain it without being
// OOM-killed; the test prints the peak RSS it measured. The package holds
// tests only; it must not be imported.
package sizing
