// Package engine decides what a message does to flights (processing rules R5, R6,
// R10.1): it merges increments, deletions and snapshot records into
// flight states, plans a whole snapshot (the replay short-circuit, the
// coverage and owner checks, the diff-delete victims with their day
// assertion, the roster and the compare-and-set on the day's version, by
// the rules of package snapshot), assigns state versions, keeps the changed
// tags, renders each effect's change notice and state document (or
// tombstone), refuses an effect whose Kafka record would be too large for
// the topics, and flags history times that are implausibly far from their
// flight's day.
//
// It does no I/O. What a decision needs arrives as data (the store reads
// it: a working set's flights, a snapshot's SnapshotFacts), the results
// leave as data (the store writes them: a WorkingSet's effects, a
// SnapshotPlan); the PostgreSQL store and the pump tests' in-memory one
// call the same functions and only read and write around them. The one
// measurement that depends on Kafka (a record's size under the producer's
// codec) is a Door passed in by the caller. The package must import no
// database driver, no Kafka client and no Kubernetes package; a test holds
// it to that (imports_test.go).
//
// Files by job:
//
//	meta.go          Meta: the message whose effects are decided
//	merge.go         Write, Merge, MergeSnapshot: one flight's next state and what changed
//	snapshotplan.go  PlanSnapshot: a snapshot's facts in, its plan out (victims, ledger, merges)
//	workingset.go    WorkingSet: increments (FLOP, ADFT) and deletions (FDEL) in memory
//	apply.go         WorkingSet.Apply: one FLOP's, ADFT's or FDEL's change applied, its implausible times named
//	stamp.go         Stamp, Upserts, Tombstones: versions and events of a snapshot's or a sweep's writes
//	event.go         Event: one outbox row, its notice and state (rendered here)
//	door.go          Door, TooLarge, RecordHeaders: the Kafka size check
//	plausible.go     ImplausibleTimes: history times far from the flight's day
package engine
