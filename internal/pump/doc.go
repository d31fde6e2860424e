// Package pump runs one feed: it reads the shared mailbox in FIFO order,
// archives and decodes each row, applies it in a fenced PostgreSQL
// transaction (batched: increments and deletions decided in memory, each
// snapshot in a savepoint of its own), records the terminal state,
// backfills the mailbox and wakes the Kafka dispatcher. Requests and
// lifecycle jobs run on the same FIFO. It reaches the mailbox, the
// database and the Kafka size check through small ports it owns (ports.go:
// Inbox, Store, Tx and the Requests lookup both answer, Answers for what a
// database error means, Door), with plain data of package pumpdata, and
// reads its configuration as a Feed (spec and time zone, no credentials).
// It imports no driver and opens nothing: the real adapters are
// *mailbox.Mailbox, pgstore/ (the feed's *store.Store as a Store) and
// *recsize.Measure, which package feedrun connects and hands to New, and
// pumptest/ keeps the mailbox and the database in memory, so its batch,
// failure, snapshot, ledger, request and lifecycle behaviour is tested on
// both backends (eachBackend in the tests). It imports no Kubernetes
// package: it runs the same under `flightfeed pump` and under the
// operator. Its
// crash-critical steps carry fail points (internal/failpoint: after
// decode, before and after the commit, after the write-back, during the
// status write), compiled in only for the reliability suite.
//
// A snapshot body of 8 MiB or more is decoded with its records deferred
// (sis.Options.DeferRecordsFrom) and handed to the store as a
// pumpdata.RecordSource that decodes 1,000 records at a time while the store
// applies them, in the message's one transaction: a full-day DNLD of 9,999
// flights (31.5 MB) peaks at about 230 MB RSS in the chart's 512 MiB.
package pump
