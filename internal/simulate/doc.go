// Package simulate generates a realistic SIS message stream for one airport
// operation day — the schedule answer to a full-day request, the AODB's
// window push, FLOP events of every kind, an ad-hoc flight, a deletion and,
// on request, malformed messages — for `flightfeed simulate` and the demo.
// Generation is pure and deterministic for a seed; writing the messages to
// a mailbox is the caller's job.
package simulate
