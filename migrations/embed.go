// Package migrations holds the PostgreSQL schema of FlightFeed as goose SQL
// files, embedded into the binary so `flightfeed migrate` and the pump apply
// exactly the schema they were built with. Files are append-only once
// released: change the schema with a new numbered file, never by editing one.
package migrations

import "embed"

// FS holds every migration file (NNNNN_name.sql, goose format).
//
//go:embed *.sql
var FS embed.FS
