// Package pumptest keeps the pump's ports in memory: a mailbox (Inbox) and
// a feed database (Store) that keeps processing states, prior copies,
// archived rows, backfill intents, flights (merged by package engine, as
// the real store writes what the engine decides), the outbox, the day
// ledger with its rosters (a snapshot is planned by engine.PlanSnapshot,
// the planner the real store calls, from the facts kept here, and its plan
// written here: merges, diff-delete victims, roster replace, the version's
// compare-and-set), flight history (the lifecycle jobs: history rules,
// NULL-day retention, ledger retention with what holds a day), full-day
// requests with the message that answered them, replay requests, and the
// writer's state cache (a cached flight whose version is still the stored
// one is taken from the cache, as the real store does). So the pump's
// batch, failure, snapshot, request and lifecycle behaviour can be tested
// without PostgreSQL or MySQL. Faults make a named call fail.
//
// It is test support: product code must not import it (a depguard rule in
// .golangci.yml). It refuses nothing the pump asks of a store; what it
// does not keep is what no port shows the pump (the trace log is kept as
// appended, not aged; delivered events and Kafka delivery are the
// dispatcher's). The pump's behaviour tests run against it and against
// the real store (one suite, two backends: eachBackend in the pump's
// tests), so it cannot drift from the real one.
package pumptest
