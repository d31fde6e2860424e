// Package bench holds the project's benchmarks that need realistic,
// production-sized inputs built in memory (run with
// `go test -bench . ./hack/bench/ -run ^$`). Timing assertions never go in
// tests; the figures are read and reported by people. They are
// diagnostics of single stages; the figure a user sees is the end-to-end
// benchmark of the built binary, hack/bench/e2e (`make bench`), and the
// control plane's is hack/bench/operator (`make bench-operator`). Both make
// their databases with hack/bench/benchdb and, comparing with a baseline
// binary, share hack/bench/rounds (alternating order, medians, ratios).
package bench
