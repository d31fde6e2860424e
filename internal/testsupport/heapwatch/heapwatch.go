// Package heapwatch measures what a call costs the test process's heap,
// for the tests that a rogue server cannot make a connection hold more
// than its bound.
package heapwatch

import (
	"runtime"
	"sync"
	"time"
)

// Run runs f and returns how far the heap in use rose above where it
// started at its highest (sampled every millisecond, so a peak shorter
// than that can be missed; garbage counts until collected) and the bytes
// allocated in all meanwhile. Whatever else the process runs counts too:
// call it from a test that is not parallel.
func Run(f func()) (peak, total uint64) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var mu sync.Mutex
	high := before.HeapAlloc
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		high = max(high, ms.HeapAlloc)
		mu.Unlock()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	sample()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return high - before.HeapAlloc, after.TotalAlloc - before.TotalAlloc
}
