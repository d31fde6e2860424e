// Package feedobjects is what the operator wants to exist for one feed:
// from a FlightFeed and the operator's pump defaults it renders the objects
// the feed's data plane runs in — the Deployment <name>-pump, its
// ServiceAccount, Role and RoleBinding, the PodDisruptionBudget, the read
// API's Service, the NetworkPolicy and its egress, the Lease, and with
// cert-manager and the Prometheus Operator the pump certificate, the
// namespace's pump CA and the ServiceMonitor (Render) — and the one part of
// the feed's status the operator writes, status.pumpPods (PumpPodsStatus).
// It also holds the pump defaults themselves (PumpDefaults: the chart's
// pump.* values, their defaults and their bounds on spec.pump.resources).
//
// It is pure: no client, no I/O, no clock. What the rendering needs beyond
// the feed and the defaults — the hosts of the feed's DSN Secrets, the API
// server's addresses, whether scraper tokens can be made — the reconciler
// (package controllers) finds and passes in (Env). Same inputs, same
// objects; every rule is table-tested here. Like controllers it imports no
// data-plane package (depguard rule control-plane in .golangci.yml).
package feedobjects
