// Package pump runs one feed: it reads the shared mailbox in FIFO order,
// archives and decodes each row, applies it in a fenced PostgreSQL
// transaction (batched, one savepoint per message), records the terminal
// state, backfills the mailbox and wakes the Kafka dispatcher. Requests and
// lifecycle jobs run on the same FIFO. It imports no Kubernetes package: it
// runs the same under `flightfeed pump` and under the operator.
package pump
