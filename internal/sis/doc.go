// Package sis owns the SIS wire format of the AODB interface: it decodes one
// raw mailbox message into a typed Message (META plus per-record
// flight.Commands), rejects bad input with a typed *Error that carries a
// machine-readable Reason, the offending element path and the failure class
// (Illegal → DEAD, Unsupported → FAILED(UNSUPPORTED)), and encodes the
// outbound RQFD request.
//
// Decoding streams encoding/xml tokens and holds one record's element tree
// at a time; a large SCHD body is cut at <FLTR> boundaries and decoded on up
// to Options.Workers goroutines, with a sequential fallback that makes the
// outcome (message or error) identical either way.
//
// It is pure: no database, no network, no logging, no clock, no file access
// (the default airport zone is a fixed UTC+8 offset, not a tzdata lookup). It
// imports only internal/flight of the project. It never panics on any input;
// FuzzDecode keeps it honest.
package sis
