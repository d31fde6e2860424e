// Package operator assembles `flightfeed manager`: a controller-runtime
// manager that runs the FlightFeed reconciler and the per-feed supervisors
// (package controllers) on every replica, serves Prometheus metrics,
// /healthz and /readyz, and the read-only flight API. It wires; decisions
// live in controllers and the pump. It must not be imported by controllers
// or by any adapter.
package operator
