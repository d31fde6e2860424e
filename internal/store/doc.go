// Package store is FlightFeed's PostgreSQL adapter for one feed's state
// database: it applies the embedded migrations, runs the pump's fenced write
// transactions and serves consistent reads (export, the read API, status)
// and the dispatcher's side of the outbox. It owns no decisions: what a
// message does to flights is package engine's (the working set, merges,
// a snapshot's plan, versions, notices and state documents, the Kafka size
// check) on the rules of package snapshot; the store reads what they
// decide from and writes what they decided. It must not decide a merge, a
// snapshot's victims, roster or version, render an outbox document or
// measure a Kafka record itself. One exception stands: the lifecycle jobs
// select finished flights and the ledger days still held in SQL
// (lifecycle.go), over the whole of current state, and the pump tests'
// in-memory store spells the same rules out in Go.
//
// Every write runs in a Tx that Store.Begin opens by locking pipeline_lock
// and checking the caller's fencing epoch; a pump that was taken over gets
// ErrFenced. A batch of messages is read by Tx.Prefetch and written by
// Tx.FinishBatch, each a fixed number of round trips whatever the batch's
// size.
//
// A snapshot is read, planned and written (Tx.ApplySnapshot): the store
// reads its facts — the records' FLIDs and days, the day's ledger row
// (locked) and roster, the stored days of those flights rather than their
// states — engine.PlanSnapshot decides, and the store writes the plan: the
// merges a chunk of 1,000 records at a time (the chunk's stored states,
// merged states, rows with COPY for large child tables and outbox events
// with COPY are all it holds in memory, whatever the snapshot's size), the
// victims, the roster and the compare-and-set on the day's version. A
// RecordSource lets the caller hand the records over a chunk at a
// time too. A large new message body is archived by a streamed COPY,
// without a second copy in pgx's send buffer.
//
// Files by job:
//
//	store.go        Open, TakeEpoch, Begin (fenced), Tx, savepoints, batch plumbing
//	migrate.go      Migrate, MigrateDownTo, SchemaVersion (goose, advisory lock)
//	dsn.go          errors that quote a DSN redacted
//	prefetch.go     Tx.Prefetch: processing states, prior copies, the batch's flights
//	setload.go      Tx.LoadSet: a working set's flights, cached ones checked by version
//	setwrite.go     Tx.WriteSet: what an engine.WorkingSet holds, written in one round trip
//	state_cache.go  StateCache: states a writer committed, reused while current
//	batch.go        the batch write: FinishBatch, RecordResult, archive and results
//	snapshot.go     Tx.ApplySnapshot: a snapshot's facts read, its plan written (roster, CAS)
//	lifecycle.go    history sweeps, ledger pruning, retention
//	requests.go     outbound requests, full-day (RQFD) and reference-data (RQRD) (req_track)
//	reuse.go        Tx.RetireReusedIDs: a mailbox id that came back as another message
//	backfill.go     backfill intents: results waiting for the mailbox
//	tracelog.go     the snapshot trace log, outside the message's transaction
//	state_write.go  flight rows written: main rows, child rows, deletions with the roster
//	state_read.go   flight rows read back into flight.State
//	columns.go      the storage layout, derived from flight's field table
//	outbox.go       msg_event rows queued (or copied) as the engine rendered them: one
//	                row per message effect, its notice and, on each flight's newest
//	                version written together, its state
//	outbox_read.go  the dispatcher's side of msg_event: its window of records, its fenced cursor
//	outbox_parked.go  parked records (msg_event_parked, by row and kind) and their re-delivery
//	read.go         consistent reads: ReadFlights (whole or one keyset page), EachFlight, Ledger
package store
