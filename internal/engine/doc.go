// Package engine decides what a message does to flights (seed 000 §6,
// SPEC §2.1): it merges increments, deletions and snapshot records into
// flight states, assigns state versions, keeps the changed tags, renders
// each effect's change notice and state document (or tombstone), refuses
// an effect whose Kafka record would be too large for the topics, and
// flags history times that are implausibly far from their flight's day.
//
// It does no I/O. The flights a decision needs arrive as data (the store
// reads them), the results leave as data (the store writes them), and the
// one measurement that depends on Kafka (a record's size under the
// producer's codec) is a Door passed in by the caller. The package must
// import no database driver, no Kafka client and no Kubernetes package; a
// test holds it to that (imports_test.go).
//
// Files by job:
//
//	meta.go        Meta: the message whose effects are decided
//	merge.go       Write, Merge, MergeSnapshot: one flight's next state and what changed
//	workingset.go  WorkingSet: increments (FLOP, ADFT) and deletions (FDEL) in memory
//	stamp.go       Stamp, Upserts, Tombstones: versions and events of a snapshot's or a sweep's writes
//	event.go       Event: one outbox row, its notice and state (rendered here)
//	door.go        Door, TooLarge, RecordHeaders: the Kafka size check
//	plausible.go   ImplausibleTimes: history times far from the flight's day
package engine
