package failpoint

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Panic points stand in for a bug of a long-lived goroutine of a pump pod:
// each such goroutine calls Panic(name) once per iteration of
// its loop, and a test of the same process arms the point (ArmPanic) to
// prove the goroutine recovers, counts the panic and goes on. They are in
// every build, as the in-process arming is what the ordinary tests use;
// the environment never arms them, so in a shipped binary Panic is one
// atomic load that finds nothing armed.
const (
	// ReadAhead: the pump's read-ahead goroutine, after it took the
	// results to write back and before it reads the head
	// (pump.readAhead).
	ReadAhead = "read-ahead"
	// OutboxFlush: the dispatcher's goroutine that flushes a pass's
	// records and records the broker's answers, after the flush
	// (dispatch.pass).
	OutboxFlush = "outbox-flush"
	// StatusReport: the pump pod's status reporter, at the start of a
	// report (pumppod reporter.report).
	StatusReport = "status-report"
	// LeaseHold: a Lease holder of the pump pod, before each renewal
	// (pumppod leaseElector.hold).
	LeaseHold = "lease-hold"
	// EpochRenew and DatabaseWatch: the pump's fencing-epoch renewal and
	// database watch, at each tick (pump.renewEpoch, pump.watchDatabase).
	EpochRenew    = "epoch-renew"
	DatabaseWatch = "database-watch"
)

// PanicNames lists every panic point.
func PanicNames() []string {
	return []string{ReadAhead, OutboxFlush, StatusReport, LeaseHold, EpochRenew, DatabaseWatch}
}

// armedPanics holds, per armed point, how many hits are left to panic;
// nil while nothing is armed (the shipped binary's case).
var (
	armedPanics atomic.Pointer[map[string]*atomic.Int64]
	armMu       sync.Mutex
)

// PanicValue is what an armed point panics with.
type PanicValue struct{ Point string }

func (v PanicValue) String() string { return "failpoint " + v.Point + ": injected panic" }

// Panic panics with a PanicValue when the point is armed and hits are
// left; otherwise it does nothing.
func Panic(name string) {
	m := armedPanics.Load()
	if m == nil {
		return
	}
	left, ok := (*m)[name]
	if !ok || left.Add(-1) < 0 {
		return
	}
	panic(PanicValue{Point: name})
}

// ArmPanic makes the next times hits of the point panic, until the
// returned function disarms it. The arming is the whole process's: a test
// that arms a point must not run in parallel with another that passes
// through it.
func ArmPanic(name string, times int) (disarm func()) {
	known := false
	for _, n := range PanicNames() {
		known = known || n == name
	}
	if !known {
		panic(fmt.Sprintf("failpoint: unknown panic point %q", name))
	}
	armMu.Lock()
	defer armMu.Unlock()
	next := map[string]*atomic.Int64{}
	if cur := armedPanics.Load(); cur != nil {
		for k, v := range *cur {
			next[k] = v
		}
	}
	left := new(atomic.Int64)
	left.Store(int64(times))
	next[name] = left
	armedPanics.Store(&next)
	return func() {
		armMu.Lock()
		defer armMu.Unlock()
		cur := armedPanics.Load()
		if cur == nil || (*cur)[name] != left {
			return
		}
		rest := map[string]*atomic.Int64{}
		for k, v := range *cur {
			if k != name {
				rest[k] = v
			}
		}
		if len(rest) == 0 {
			armedPanics.Store(nil)
			return
		}
		armedPanics.Store(&rest)
	}
}
