// Package cli holds the cobra commands of the flightfeed binary (docs/operations.md):
// manager, pump (and pump --drain), migrate, export, ledger, simulate, dead,
// status and replay, and the kubectl plugin's tree of the user commands
// (NewPluginCommand, run by cmd/kubectl-flightfeed with kubectl's flags and
// printers: Kubectl). It must not import kubectl's library
// (k8s.io/cli-runtime) itself: the flightfeed binary, which every pump pod
// runs, would link it. Each command parses its flags, loads configuration
// (package config) or, for dead, parked and replay with --feed, asks the
// feed's read API through the API server's service proxy (opsBackend), and
// calls into the packages that do the work (`pump --feed` parses its flags
// into pumppod.Options and calls pumppod.Run, which assembles the pump
// pod). It owns only process concerns:
// exit codes (2 for a bad command line
// or config, 1 otherwise, one line on stderr), signals, logging setup, the
// Go memory limit from the container's cgroup and, after an interrupted
// drain, saying what was left. No flight, mailbox or snapshot rule lives
// here.
package cli
