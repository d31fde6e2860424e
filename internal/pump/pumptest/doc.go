// Package pumptest keeps the pump's ports in memory: a mailbox (Inbox) and
// a feed database (Store) that keeps processing states, prior copies,
// archived rows, backfill intents, flights (merged by package engine, as
// the real store writes what the engine decides), the outbox, full-day
// requests and replay requests, so the pump's batch, failure, snapshot and
// request behaviour can be tested without PostgreSQL or MySQL. Faults make
// a named call fail.
//
// It is test support: product code must not import it (a depguard rule in
// .golangci.yml). What it does not keep, it refuses with ErrNotInMemory
// rather than pretending: full-day snapshots (their day ledger, roster and
// diff-delete are the real store's) and the history jobs. The pump's
// behaviour tests run against it and against the real store (one suite,
// two backends), so it cannot drift from what the pump needs.
package pumptest
