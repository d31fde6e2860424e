// Package config owns a feed's configuration: the resolved Feed (spec with
// every default applied, airport time zone, credentials) that every other
// package takes, the defaults (SetDefaults) and the validation
// (ValidateSpec), the --config YAML file of the non-Kubernetes commands
// (Load, Parse: strict decoding, defaults, validation) and the redaction of
// DSNs in messages. The operator resolves a FlightFeed and its Secrets in
// package controllers with the same SetDefaults and ValidateSpec, so a feed
// behaves the same under `flightfeed pump` and the operator; no other
// package sets defaults again.
//
// It reads the config file but never connects to anything and holds no
// Kubernetes client.
package config
