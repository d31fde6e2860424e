// Package controllers is the FlightFeed operator: control plane only. For
// each FlightFeed it makes and owns, in the feed's namespace, the objects
// its data plane runs in — the Deployment <name>-pump (pods running
// `flightfeed pump --feed NS/NAME`), their ServiceAccount, Role and
// RoleBinding, a PodDisruptionBudget, the read API's Service, a
// NetworkPolicy when enabled, the feed's Lease and, with cert-manager and
// the Prometheus Operator, its pump certificate and ServiceMonitor — and
// writes one part of the feed's status, status.pumpPods. Once per
// namespace holding a FlightFeed, owned by the namespace's feeds, it keeps
// the namespace's pump CA (cert-manager Issuers) and the Secret of the
// scraper's per-feed tokens. Everything else in the status, the
// FlightFeedDays and the feed's Events are written by the pump pod that
// leads the feed (package pumppod).
//
// It opens no connection to any mailbox, database or Kafka broker: the pump
// pods do that under their own ServiceAccount, which may get exactly the
// Secrets its feed names. With the NetworkPolicy on, it reads the feed's
// DSN Secrets (by name, uncached; it uses only those that consent to the
// feed, as the pump does) for
// their host and port alone, to open the pods' egress to exactly those
// (egress.go); it keeps and logs nothing else of them. It
// imports no data-plane package (store, mailbox, dispatch, pump, feedrun,
// pumppod); the names both sides share come from package feednames.
//
// The reconciler finds and writes; it does not decide what the objects
// hold. What one feed's objects and status.pumpPods are, and the pump
// defaults with their bounds, are package feedobjects: pure, and
// table-tested there. The operator's RBAC markers, which controller-gen
// reads from this package, are in reconciler.go.
package controllers
