// Package backoff is the one retry pacing of the house, used by the pump
// (FAILED(INFRA) and FAILED(UNSUPPORTED) retries), the dispatcher (failed
// passes) and the operator's supervisor (restarts of a failing pump):
// retry n waits a random time in the upper half of min(limit,
// initial·2^(n-1)), so it keeps a pace yet replicas and feeds do not retry
// in step.
//
// It owns only the arithmetic: no clock, no sleeping, no state. The caller
// counts its attempts, waits on its own (injectable) clock and passes the
// source of jitter, so the rule is a pure function with a table test.
//
// Why not k8s.io/apimachinery's wait.Backoff: its Step mutates the value
// and draws jitter from the global random source, so a test cannot pin the
// result, and its jitter lengthens a delay (d to d·(1+jitter)) where ours
// keeps it within [d/2, d]; the figures the three callers document would
// change. It must not grow policy (attempt limits, resets): those stay
// with the callers.
package backoff
