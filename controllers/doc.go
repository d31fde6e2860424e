// Package controllers is the FlightFeed operator: control plane only. For
// each FlightFeed it renders and owns, in the feed's namespace, the objects
// its data plane runs in — the Deployment <name>-pump (pods running
// `flightfeed pump --feed NS/NAME`), their ServiceAccount, Role and
// RoleBinding, a PodDisruptionBudget, the read API's Service, a
// NetworkPolicy when enabled, and the feed's Lease — and writes one part
// of the feed's status, status.pumpPods. Everything else in the status, the
// FlightFeedDays and the feed's Events are written by the pump pod that
// leads the feed (package pumppod).
//
// It opens no connection to any mailbox, database or Kafka broker, parses
// no DSN and reads no Secret's data: the pump pods do that under their own
// ServiceAccount, which may get exactly the Secrets its feed names. It
// imports no data-plane package (store, mailbox, dispatch, pump, feedrun,
// pumppod); the names both sides share come from package feednames. Object
// rendering is pure (objects.go) and table-tested.
package controllers
