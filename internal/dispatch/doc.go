// Package dispatch publishes the outbox (msg_event) to Kafka: each flight's
// full state on the state topic (KAFKA_SCHD), coalesced per FLID to its
// newest state_version, tombstones for deleted flights, and every change
// notice on the notice topic (KAFKA_MSG), with an idempotent producer
// (acks=all, key = FLID, murmur2 partitioning like the Java client). It marks
// an event delivered only after the broker acknowledged its record, and
// retries everything else with backoff, forever (seed 000 §7.3, SPEC §3.3).
//
// What the pump calls:
//
//   - NewClient(feed, opts...) builds the *kgo.Client from the feed's Kafka
//     configuration (seed brokers, client id, TLS, SASL PLAIN/SCRAM, topic
//     auto-creation only when the spec allows it). New refuses a client built
//     otherwise, because delivery relies on its manual flushing.
//   - New(store, client, feed, Options) returns a *Dispatcher.
//   - Dispatcher.Run(ctx) delivers until ctx ends and returns nil then; it
//     never returns because Kafka or the database fails. Close the client
//     only after Run returned.
//   - Dispatcher.Notify() wakes Run after a commit that queued events; it
//     never blocks and many calls coalesce into one pass. A periodic scan
//     (Options.ScanInterval) finds anything else, such as events left by a
//     previous process.
//   - Dispatcher.Status() reports pending events, the oldest pending age,
//     the last error with a typed reason and delivery counters, for the
//     status reporter.
//   - Dispatcher.Idle(ctx) is true when no event is PENDING (`pump --drain`).
//   - Dispatcher.DeliverOnce(ctx) runs one pass (tests).
//
// Records: topic = state topic for KAFKA_SCHD rows, notice topic for
// KAFKA_MSG rows; key = the FLID in decimal; value = the payload exactly as
// committed (canonical JSON, tombstone {"DELETED":true,"FLID":…,
// "STATE_VERSION":N}, or the notice); headers state-version (decimal),
// event (UPSERT, DELETE or NOTICE) and operation-day (YYYY-MM-DD, absent
// while the flight's day is NULL).
//
// Ordering: a pass reads the oldest Options.BatchSize pending rows in id
// order, sends their notices and, for each FLID among them, only its newest
// pending KAFKA_SCHD event; it buffers all records, flushes, and waits for
// every acknowledgement before the next pass reads again. Records of one
// FLID share a partition (same key), so the state topic's versions per FLID
// never decrease; the older state events of a FLID become SUPERSEDED in the
// statement that marks the newest one DELIVERED, only after the broker
// acknowledged it. A failed record holds back later records of its FLID in
// the same pass, and franz-go fails the rest of its partition with it, so
// nothing newer of a FLID is acknowledged ahead of something older.
//
// Failures: a pass whose records failed (unreachable broker after the
// client's delivery timeout, missing topic, authorization, database) is
// retried with doubling, jittered backoff forever; the events stay PENDING
// with attempts and last_error. Records already sent are never abandoned
// (that would break idempotence): a pass waits for the broker's answer, and
// after Options.StallAfter Status reports it as failing meanwhile.

// The package owns no decisions about flight state and never writes state
// tables: it reads pending rows and changes only msg_event status. It must
// not be on the pump's path: the pump commits without waiting for Kafka.
package dispatch
