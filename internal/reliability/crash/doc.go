//go:build reliability

// Package crash is the reliability suite's crash scenarios (point 1): the pump process, built with the `reliability` tag, crashes
// at each named fail point of internal/failpoint — after decode, inside
// the transaction before commit, after commit before the write-back,
// after the write-back before the intent delete, after the Kafka commit
// before the delivered mark, during the status write — and a restart
// finishes the simulator's 2,000-message day. Every scenario ends where a
// clean run of the same rows ended (internal/reliability/check).
//
// Bounded mode (the default, `make test`): one crash per point. Full mode
// (FLIGHTFEED_RELIABILITY=full, `make reliability`): several crashes per
// point, one after another in the same day at rising hit counts, each
// restart armed again until the last, unarmed one drains.
package crash
