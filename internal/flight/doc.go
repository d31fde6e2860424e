// Package flight owns the in-memory model of one flight's current state: the
// FLID identity, the one table of SIS fields and their kinds (scalar,
// collection, anomaly, record), the per-field commands a decoded message
// turns into, the merge engine that applies them to a State (Apply), SIS
// local-time parsing and the plausibility of history times, the canonical
// JSON document that export, Kafka and the read API all publish, and the
// diff between two states with its JSON (the history's changes).
//
// It is pure: no I/O, no logging, no clock (callers pass the time zone and
// the instants), and it imports nothing of the project.
package flight
