// Package check holds what every scenario of the reliability suite
// (internal/reliability/..., `make reliability`) asserts, so the
// scenarios differ only in the fault they inject.
//
// A scenario runs the same mailbox rows (Day: the simulator's day) through
// two feeds: a clean run, the reference, and a run with faults, each on its
// own PostgreSQL database, MariaDB mailbox and Kafka broker (NewWorld). Once
// both are drained, Read collects what a client of each can see (Outcome):
// `flightfeed export` and `flightfeed ledger` of the built binary, the
// mailbox results, proc_state, both Kafka topics read with read_committed
// (internal/dispatch/dispatchtest), and the store's own figures of outbox
// events pending or parked and of results not yet written back. Compare
// then counts what the faulted run lost, regressed or did twice against the
// reference (Report), and Self checks one run on its own: the last state
// record per FLID equals its export, per-FLID versions never decrease,
// nothing is left pending. Report.Assert fails the test with the details;
// Summary is the one line a scenario prints (and, with SummaryEnv set,
// appends to a file), the figures of docs/reliability.md.
//
// The clean run is checked before it serves as the reference: Validate
// (what the workload fixes: rows, DEAD rows, flights, ledger) and
// Expected.CheckPinned (its contents — each row's result, note,
// processing record and notice count, each flight's masked document, the
// ledger — equal testdata/day-N.pinned, written relative to the day the
// suite runs; -update-clean-run rewrites it).
//
// Across two runs STATE_VERSION (a sequence a rolled-back transaction also
// consumes) and UPDATED_AT (a commit time) legitimately differ: they are
// masked (Mask) wherever documents of the two runs are compared, and never
// within one run. Kafka delivery is at least once: a record sent again
// after a crash between the Kafka commit and the delivered mark is counted
// as Redelivered, not as a duplicated effect; an effect applied twice (a
// notice of the same message and change under two versions, a ledger or
// proc_state line the reference lacks, a flight it does not have) is.
package check
