// Package operator assembles `flightfeed manager`, the control plane: a
// controller-runtime manager, leader-elected among its replicas, that runs
// the FlightFeed reconciler of package controllers (each feed's pump
// Deployment and the objects around it, status.pumpPods) and serves
// Prometheus metrics, /healthz and /readyz. It wires; it decides nothing,
// and like controllers it imports no data-plane package: the operator opens
// no connection to any mailbox, database or broker.
package operator
