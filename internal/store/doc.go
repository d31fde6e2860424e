// Package store is FlightFeed's PostgreSQL adapter for one feed's state
// database: it applies the embedded migrations, runs the pump's fenced write
// transactions and serves consistent reads (export, the read API, status)
// and the dispatcher's side of the outbox. It owns no decisions: what a
// message does to flights is package engine's (the working set, merges,
// versions, notices and state documents, the Kafka size check) and the
// snapshot rules are package snapshot's; the store reads the flights they
// need and writes their result. It must not decide a merge, render an
// outbox document or measure a Kafka record itself.
//
// Every write runs in a Tx that Store.Begin opens by locking pipeline_lock
// and checking the caller's fencing epoch; a pump that was taken over gets
// ErrFenced. A batch of messages is read by Tx.Prefetch and written by
// Tx.FinishBatch, each a fixed number of round trips whatever the batch's
// size.
//
// A snapshot is decided on its FLIDs and days alone (coverage, owners,
// diff-delete victims, from the stored days rather than stored states),
// then merged by the engine and written a chunk of 1,000 records at a
// time: the chunk's stored states, merged states, rows (COPY for large
// child tables) and outbox events (COPY) are all it holds in memory,
// whatever the snapshot's size; a RecordSource lets the caller hand the records over a chunk at a
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
//	snapshot.go     Tx.ApplySnapshot: full-day and window snapshots, the roster, CAS
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
