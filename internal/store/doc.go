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
// (pump_lifecycle.go), over the whole of current state, and the pump tests'
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
// Files by client: the store serves three, and each file's name says
// whose calls it holds. What all share has no prefix.
//
//	store.go          Open, TakeEpoch, Begin (fenced), Tx, savepoints, batch plumbing, ErrNotFound
//	migrate.go        Migrate, MigrateDownTo, SchemaVersion (goose, advisory lock)
//	dsn.go, bound.go  errors that quote a DSN redacted; the bound on what the server may send
//	unanswered.go     the calls in progress on the pool (a database that stopped answering)
//	columns.go        the storage layout, derived from flight's field table
//	state_read.go     flight rows read back into flight.State (the pump's loads, the reads)
//	dberror.go        what a database error says about a message (pumpdata.Answer)
//
// The pump (through its adapter, internal/pump/pgstore): the batch's reads
// and writes in its fenced transactions, and the few calls outside one.
//
//	pump_prefetch.go    Tx.Prefetch: processing states, prior copies, the batch's flights
//	pump_setload.go     Tx.LoadSet: a working set's flights, cached ones checked by version
//	pump_setwrite.go    Tx.WriteSet: what an engine.WorkingSet holds, written in one round trip
//	pump_statecache.go  StateCache: states a writer committed, reused while current
//	pump_batch.go       the batch write: FinishBatch, RecordResult, archive and results
//	pump_statewrite.go  flight rows written: main rows, child rows, deletions with the roster
//	pump_mainrow.go     the main rows' columns and their upsert
//	pump_outbox.go      msg_event rows queued (or copied) as the engine rendered them: one
//	                    row per message effect, its notice and, on each flight's newest
//	                    version written together, its state
//	pump_snapshot.go    Tx.ApplySnapshot: a snapshot's facts read, its plan written (roster, CAS)
//	pump_lifecycle.go   history sweeps, ledger pruning, retention
//	pump_requests.go    outbound requests, full-day (RQFD) and reference-data (RQRD) (req_track)
//	pump_reference.go   Tx.ApplyReference: a reference-data message's records
//	pump_replay.go      the pending replays, the original message, the outcome
//	pump_reuse.go       Tx.RetireReusedIDs: a mailbox id that came back as another message
//	pump_backfill.go    backfill intents: results waiting for the mailbox
//	pump_tracelog.go    the snapshot trace log, outside the message's transaction
//
// The dispatcher (internal/dispatch): its side of msg_event.
//
//	dispatch_outbox.go  its window of records, its fenced cursor, failed attempts, the figures
//
// The read API (internal/readapi: readapi, opsapi, historyapi, refapi) and the
// commands that read the database directly (`flightfeed export`, `ledger`,
// `dead`, `parked`, `replay`, `rerequest`, `ref`): consistent reads and
// the operators' few writes. They get the store's own errors
// (ErrNotFound, ErrNoReferenceRecord), never the driver's.
//
//	readapi_flights.go    ReadFlights (whole or one keyset page), EachFlight, Ledger
//	readapi_dead.go       DeadMessages: DEAD and FAILED messages, with their replays
//	readapi_parked.go     parked records (msg_event_parked) and their re-delivery
//	readapi_replay.go     replay requests recorded and read
//	readapi_requests.go   an operator's re-request of a held day
//	readapi_reference.go  reference-data lists and records
package store
