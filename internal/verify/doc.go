// Package verify decides whether a day served by a feed is what its
// archived messages make of it: the rules that say whether the archive can
// rebuild the day at all (Coverage), the request history a rebuilt
// message sees (RequestLog), and the comparison of the rebuilt day with
// the served one (Compare). It is pure: package verify/rebuild reads the
// feed's database, runs the pump on the archive and calls it.
//
// # How a day is rebuilt
//
// The pump itself rebuilds the day, on its own ports: an Inbox that serves
// the archived raw messages (msg_archive) of every message the feed
// finished (proc_state SUCCEEDED, SKIPPED or DEAD) in mailbox order
// (received time, then id), and the real PostgreSQL store in a scratch
// schema made for the run (migrated there, dropped afterwards). The live
// tables are only read, through a read-only connection. The rebuild sends
// no request and writes to no mailbox (its Inbox refuses to), publishes
// nothing (no dispatcher runs) and runs no lifecycle job (history sweep,
// retention: they depend on the wall clock, not on the messages).
//
// # Why the request history is the live one
//
// A full-day RESP is attributed by the requests the pump had sent when it
// processed it (snapshot.Attribute: the live request's day and receiver,
// whether a day was ever requested from the sender). The rebuild sends no
// request, so it cannot make that history; it reads the live request log
// (req_track) once and answers each message's questions from it as of the
// moment the live pump processed that message (its proc_state finish
// time) and its place in the mailbox order: a request completed by
// message C was live for every message from its opening up to C
// included; one that ended otherwise (expired, timed out, given up) was
// live until it ended; one still live is live from its opening on (see
// RequestLog). Settling a request in the rebuild writes nothing: the live
// log already holds the outcome. The count of refused answers as of a
// message is not kept by the log, so whether a refusal gave a request up
// is not rebuilt; it changes the request, never a flight.
//
// Each message is applied alone (batch size one, no read-ahead), so the
// rebuild knows which message asks; the store's clock is set to the live
// finish time of the message it applies.
//
// # What is compared
//
// Every flight of the day in current state, field by field (flight.Diff)
// and by the message that last changed it; the version and update time
// are masked (the version is a value of a database sequence, the time the
// moment of processing). The day's ledger by what its version stands for:
// the message of the latest full-day snapshot and its roster. Per message,
// the result and reason of processing; the first message whose result
// differs is where the rebuild and the served history part.
//
// # When a day cannot be verified
//
// A rebuild is only as good as its archive: a message the feed finished
// but whose body is no longer archived (pruned by archive retention, or
// processed before the archive existed) may have touched the day, so the
// day is NOT VERIFIABLE (Coverage), never reported as verified; so is a
// day whose snapshots, ledger or flights name a message not archived, and
// a message whose archived body was cut at the size limit unless the live
// pump refused it whole (DEAD) for that size.
package verify
