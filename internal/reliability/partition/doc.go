//go:build reliability

// Package partition is the reliability suite's partitions and split brain
// (point 3), both against one clean drain of the same rows
// (internal/reliability/check):
//
//   - TestLeaderCutOffFromTheAPIServer: two `flightfeed manager` processes
//     on an envtest control plane; the leader reaches the API server
//     through an in-process proxy (internal/testsupport/faultproxy), which
//     is frozen (Stall: nothing forwarded, connections held) while the
//     leader still reaches PostgreSQL and Kafka. The other replica takes
//     the Lease and a newer fencing epoch; the old leader stops its pump
//     when it cannot renew its Lease, commits nothing more (a write audit
//     of triggers names the writer of every fenced write) and publishes
//     nothing a read_committed consumer sees after the new leader's first
//     record (the records' producer epochs). The final state equals the
//     clean run's.
//   - TestTwoPumpsOnOneConfig: two `flightfeed pump` processes on one
//     --config, no Kubernetes: the second takes the fencing epoch, the
//     first is fenced at its next transaction, stops and says which pump
//     holds the feed; exactly one makes progress from then on, and the
//     final state equals the clean run's.
package partition
