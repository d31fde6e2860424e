// Package store is FlightFeed's PostgreSQL adapter: it applies the embedded
// migrations and (in later parts) runs the fenced write transactions, bulk
// I/O and consistent reads. It owns no decisions: the rules live in the
// pure packages and arrive here as data to write.
package store
