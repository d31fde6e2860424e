// Package flight owns the in-memory model of one flight's current state: the
// FLID identity, the one table of SIS fields and their kinds (scalar,
// collection, anomaly, record), the per-field commands a decoded message
// turns into, SIS local-time parsing, and the canonical JSON document that
// export, Kafka and the read API all publish.
//
// It is pure: no I/O, no logging, no clock, and it imports nothing of the
// project. The merge engine that applies Commands to a State lives here too
// once it is written (a later issue); the types are shaped for it.
package flight
