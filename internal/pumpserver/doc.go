// Package pumpserver assembles one pump pod, `flightfeed pump --feed
// NS/NAME`: a controller-runtime manager scoped to that one FlightFeed that
// runs its reconciler and supervisor (package pumppod) — Lease election
// among the feed's pods, the fencing epoch, the pump and the dispatcher on
// the leader, the status, FlightFeedDays and Events — and serves the
// feed's Prometheus metrics, /healthz and /readyz, and its read API (the
// flights, and the DEAD messages, parked events and replay requests that
// `flightfeed dead|parked|replay --feed` ask for through the API server's
// service proxy), each request authorized for a token of the feed's
// audience. It wires; decisions live in pumppod and the pump. It must
// not be imported by controllers or by any adapter.
package pumpserver
