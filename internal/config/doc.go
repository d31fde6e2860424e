// Package config turns either a FlightFeed spec plus its Secrets (the
// operator) or a --config YAML file (the non-Kubernetes commands) into one
// resolved, defaulted and validated Feed. Both paths share the defaults and
// the validation, so a feed behaves the same under `flightfeed pump` and the
// operator. It reads files but never connects to anything.
package config
