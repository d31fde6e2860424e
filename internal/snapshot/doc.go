// Package snapshot holds the pure rules of snapshot processing (processing rules
// R5, R10 item 5): the attribution of a RESP or DNLD to a full-day
// snapshot of one day or to window semantics (Attribute), the day-coverage
// and owner checks, the diff-delete set and the assertion on its victims,
// and roster digests. A refusal is a typed *Rejection. Given the facts it
// decides; it never reads or writes anything itself and imports only
// package flight.
package snapshot
