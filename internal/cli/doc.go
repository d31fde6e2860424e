// Package cli holds the cobra commands of the flightfeed binary (SPEC §5).
// Each command parses its flags, loads configuration and calls into the
// packages that do the work; no business rule lives here.
package cli
