// Package bench holds the project's benchmarks that need realistic,
// production-sized inputs built in memory (run with
// `go test -bench . ./hack/bench/ -run ^$`). Timing assertions never go in
// tests; the figures are read and reported by people.
package bench
