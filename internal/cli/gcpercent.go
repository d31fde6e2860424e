package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/go-logr/logr"
)

// The pump's collector. With GOGC=100 a collection starts when the heap
// has grown by as much as it held live after the last one. A backlog
// drain keeps a few tens of megabytes live (the state cache, the batches
// in flight) while each message allocates about 19 KB that dies at once:
// the collector's marking was about a tenth of the pump's CPU. A fixed
// higher GOGC would raise every peak with it, a large snapshot's too. So
// while the pump allocates fast (gcBusyRate: a backlog, a full-day
// snapshot) it lets the heap grow by at least gcHeadroom after a
// collection, never by less than GOGC=100 would, and never by more than
// gcMaxPercent of the live heap: a small live heap is collected less
// often, one of gcHeadroom or more exactly as before. A steady stream or
// an idle feed keeps Go's default: there a collection every few seconds
// costs little, and a heap let grow by tens of megabytes between them
// cost more (about 3 % more CPU a message at 50 messages a second,
// measured against GOGC=100): the fresh memory it walks through. The soft
// memory limit (applyMemoryLimit) still bounds the heap in a container.
const (
	gcHeadroom   = 48 << 20
	gcMinPercent = 100
	gcMaxPercent = 400
	// gcBusyRate is the allocation rate, in bytes a second between two
	// collections, from which the heap gets the headroom: a backlog
	// allocates over 100 MB/s, a stream of 50 messages a second about 1.
	gcBusyRate = 16 << 20
)

// gcPercentFor is the GC percent after a collection that left live bytes
// marked, when allocated bytes were allocated in the elapsed time since
// the collection before: gcMinPercent below gcBusyRate, otherwise the
// percent that lets the heap grow by gcHeadroom, within [gcMinPercent,
// gcMaxPercent].
func gcPercentFor(live, allocated uint64, elapsed time.Duration) int {
	if elapsed > 0 && float64(allocated) < gcBusyRate*elapsed.Seconds() {
		return gcMinPercent
	}
	if live <= gcHeadroom*100/gcMaxPercent {
		return gcMaxPercent
	}
	return max(gcMinPercent, int(gcHeadroom*100/live))
}

// gcTuner sets the GC percent after every collection from the live heap
// it marked and the bytes allocated since the collection before
// (runtime/metrics), through a cleanup of an object dropped before each
// collection: the runtime has no other hook at the end of a cycle.
type gcTuner struct {
	set     func(int) int
	now     func() time.Time
	sample  []metrics.Sample
	percent int
	// allocs and at are the cumulative allocated bytes and the time at
	// the last tune (or the start).
	allocs uint64
	at     time.Time
}

// gcSentinel is the object whose cleanup runs once per collection. It
// holds a pointer, so it is not batched with other small objects by the
// tiny allocator (a batched object is freed, and cleaned up, only with
// its neighbours).
type gcSentinel struct{ _ *gcSentinel }

func (t *gcTuner) arm() {
	runtime.AddCleanup(&gcSentinel{}, func(t *gcTuner) { t.tune(); t.arm() }, t)
}

// tune applies the percent for the live heap of the last collection and
// the allocation rate since the tune before, when it changed.
func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 || t.sample[1].Value.Kind() != metrics.KindUint64 {
		return
	}
	now, allocs := t.now(), t.sample[1].Value.Uint64()
	allocated, elapsed := allocs-t.allocs, now.Sub(t.at)
	t.allocs, t.at = allocs, now
	if p := gcPercentFor(t.sample[0].Value.Uint64(), allocated, elapsed); p != t.percent {
		t.percent = p
		t.set(p)
	}
}

// applyGCPercent starts the pump's GC tuning when GOGC does not set the
// percent (an explicit GOGC, "off" included, is the operator's decision
// and wins). It reports whether it did.
func applyGCPercent(log logr.Logger, getenv func(string) string, set func(int) int) bool {
	if getenv("GOGC") != "" {
		return false
	}
	t := &gcTuner{set: set, now: time.Now, percent: gcMinPercent,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"}}}
	metrics.Read(t.sample)
	if t.sample[1].Value.Kind() == metrics.KindUint64 {
		t.allocs = t.sample[1].Value.Uint64()
	}
	t.at = t.now()
	set(t.percent)
	t.arm()
	log.V(1).Info("GC percent set from the live heap and the allocation rate after each collection",
		"headroom", gcHeadroom, "minPercent", gcMinPercent, "maxPercent", gcMaxPercent, "busyRate", gcBusyRate)
	return true
}

// applyPumpGCPercent is applyGCPercent on this process.
func applyPumpGCPercent(log logr.Logger) {
	applyGCPercent(log, os.Getenv, debug.SetGCPercent)
}
