// Package failpoint places named crash points in the production code for
// the reliability suite (internal/reliability, `make reliability`).
//
// A fail point is one call, Hit(name), at a step of the pipeline where a
// crash must be survived. Without the `reliability` build tag Hit is an
// empty function that the compiler inlines away: the shipped binary has no
// fail points and ignores the environment. Built with `-tags reliability`,
// the binary reads FLIGHTFEED_FAILPOINTS (Env) once at start; a point armed
// there crashes the process the n-th time it is hit, like a power cut: it
// writes one line to standard error ("failpoint: after-commit hit 3:
// crashing") and sends SIGKILL to itself, so no deferred function, signal
// handler, rollback or flush runs.
//
// The variable's syntax (Parse) is a comma-separated list of name@n, n ≥ 1
// (a bare name means @1):
//
//	FLIGHTFEED_FAILPOINTS=after-commit@3
//	FLIGHTFEED_FAILPOINTS=after-decode@40,status-write@7
//
// An unknown name or a malformed entry makes the tagged binary exit with
// status 2 at start, saying why: a misspelt point must not let a test pass
// without the crash it asked for.
//
// The points, in the order a message meets them:
//
//   - AfterDecode ("after-decode"): a batch of mailbox rows has been read
//     and decoded, nothing of it applied (pump.decodeBatch).
//   - BeforeCommit ("before-commit"): inside the batch's PostgreSQL
//     transaction, everything written, just before COMMIT
//     (pump.processBatch).
//   - AfterCommit ("after-commit"): the batch committed, its results not
//     yet queued for the mailbox write-back (pump.processBatch).
//   - AfterWriteBack ("after-write-back"): results written back to the
//     mailbox, their backfill intent not yet deleted (pump.backfill).
//   - AfterKafkaCommit ("after-kafka-commit"): the dispatcher's Kafka
//     transaction committed, the outbox cursor ("delivered" mark) not yet
//     moved (dispatch.endTransaction).
//   - StatusWrite ("status-write"): while the pump writes its Status —
//     the report `flightfeed pump` keeps and the operator copies to the
//     FlightFeed's status — under the status lock (pump.update). The CLI
//     pump persists no status of its own: this in-memory write is the
//     status write it performs, after every batch and head read.
//
// Panic points (panic.go) are another kind: Panic(name) in each long-lived
// goroutine of a pump pod, armed only from inside the process (ArmPanic, by
// the tests of a pump pod's availability), never from the environment, in every
// build. An armed point panics, and the goroutine must recover, count the
// panic (flightfeed_pump_panics_total{where}) and go on.
package failpoint
