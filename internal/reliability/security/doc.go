// Package security is the reliability suite's security scenarios (build tag
// reliability; `make reliability`, and bounded in `make test`): hostile
// identifiers in a FlightFeed are refused by the API server itself, and a
// pump driven through dependency faults (its PostgreSQL and mailbox
// connections cut through faultproxy) with a marker in every credential
// shows it in none of its outputs (log at the highest verbosity, the
// one-line errors, and what `dead`, `ledger`, `export` and `parked`
// print). The config file side of the identifiers is internal/config's
// TestHostileIdentifiersAreRefused; the operator's logs, Events, status
// and metrics are internal/e2e's TestNoSecretAnywhere.
package security
