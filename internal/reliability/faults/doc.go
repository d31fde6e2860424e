//go:build reliability

// Package faults is the reliability suite's dependency faults (point 2): `flightfeed pump --drain`, the built binary, runs the
// simulator's 600-message day against PostgreSQL, the MariaDB mailbox and
// an in-process kfake broker, each behind an in-process TCP proxy on
// loopback (internal/testsupport/faultproxy), and the proxies break the
// connections in the middle of the drain:
//
//   - PostgreSQL: a statement inside a batch cut (three times); a COMMIT
//     carried out whose acknowledgement is lost (three times: the pump
//     must read proc_state again and apply nothing twice); down (port
//     refused, connections reset) for 5 s; stalled (nothing forwarded,
//     connections held) for 8 s;
//   - MariaDB: the head read cut, the write-back cut (three times each);
//     a stall of 8 s at the head read and at the write-back (the mailbox
//     DSN with the driver's readTimeout and writeTimeout, 2 s: without
//     them a stalled connection waits for ever); down for 5 s;
//   - Kafka: unreachable for 30 s; every request 2 s late until two
//     passes delivered.
//
// and, with no proxy in the way, the faults an operator or a restart deals
// from outside (sessions_test.go): the pump SIGKILLed mid-drain and
// drained again; every PostgreSQL session of the pump terminated
// (pg_terminate_backend) and every MariaDB session on the mailbox killed
// (KILL), at each strike point; the broker process closed for 20 s and
// started again on the same port with its log.
//
// Kafka clients learn broker addresses from metadata, so a proxy on the
// bootstrap address alone would be bypassed: the broker listens through
// faultproxy.Listen (kfake.ListenFn) and advertises the proxy's address.
//
// Every scenario ends with the assertions of point 1
// (internal/reliability/check) against one clean drain of the same rows:
// export, ledger, mailbox results and proc_state equal; the topics read
// read_committed converge to the export with per-FLID versions never
// decreasing; nothing pending. While PostgreSQL or the mailbox is down or
// stalled the head must not move (proc_state, read directly); down (and
// the mailbox stalled past its readTimeout), the pump's log names the
// dependency and the error ("batch rolled back" for
// PostgreSQL, "mailbox unreachable" for the mailbox, the dispatcher's
// "waiting for the broker" for Kafka; `pump` has no status endpoint: the
// same reasons are the operator's DatabaseReachable, MailboxReachable and
// KafkaReachable conditions). A stalled PostgreSQL (no call fails, and the
// server's statement_timeout cannot answer through the stall) is reported
// once a call has waited pump.DatabaseStallAfter: "database not
// answering; the head waits" with the call in progress, and "database
// answering again" after (DatabaseReachable false with the same reason
// under the operator). While Kafka is down the pump
// keeps applying (events wait in the outbox) and the drain does not end.
//
// Bounded mode (the default, `make test`): three strikes per repeated
// fault. Full mode (FLIGHTFEED_RELIABILITY=full): six.
package faults
