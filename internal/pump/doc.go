// Package pump runs one feed: it reads the shared mailbox in FIFO order,
// archives and decodes each row, applies it in a fenced PostgreSQL
// transaction (batched: increments and deletions decided in memory, each
// snapshot in a savepoint of its own), records the terminal state,
// backfills the mailbox and wakes the Kafka dispatcher. Requests and
// lifecycle jobs run on the same FIFO. It reaches the mailbox and the
// database through small ports it owns (ports.go: Inbox, Store, Tx; the
// real ones are *mailbox.Mailbox and Postgres), so its loop and failure
// handling are tested in memory too. It imports no Kubernetes package: it
// runs the same under `flightfeed pump` and under the operator. Its
// crash-critical steps carry fail points (internal/failpoint: after
// decode, before and after the commit, after the write-back, during the
// status write), compiled in only for the reliability suite.
package pump
