// Package snapshot holds the pure rules of snapshot processing (seed 000
// §5): the day-coverage and owner checks, the diff-delete set and its
// assertion, and roster digests. Given the current facts it decides; it never
// reads or writes anything itself.
package snapshot
