package cli

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func TestGCPercentFor(t *testing.T) {
	busy, busyFor := uint64(gcBusyRate), time.Second // exactly the busy rate
	for _, c := range []struct {
		live, allocated uint64
		elapsed         time.Duration
		want            int
	}{
		{0, busy, busyFor, gcMaxPercent},
		{1 << 20, busy, busyFor, gcMaxPercent},
		{gcHeadroom / 4, busy, busyFor, gcMaxPercent},
		{gcHeadroom / 2, busy, busyFor, 200},
		{gcHeadroom * 2 / 3, busy, busyFor, 150},
		{gcHeadroom, busy, busyFor, gcMinPercent},
		{300 << 20, busy, busyFor, gcMinPercent},
		// A backlog: 130 MB in a second.
		{gcHeadroom / 2, 130 << 20, time.Second, 200},
		// A steady stream or an idle pump: Go's default, whatever the live heap.
		{1 << 20, busy - 1, busyFor, gcMinPercent},
		{gcHeadroom / 2, 1 << 20, time.Second, gcMinPercent},
		{gcHeadroom / 4, 40 << 20, 2 * time.Minute, gcMinPercent},
		{gcHeadroom / 4, 0, time.Second, gcMinPercent},
		// No time measured (the clock did not move): the allocation counts.
		{gcHeadroom / 2, 1 << 20, 0, 200},
	} {
		if got := gcPercentFor(c.live, c.allocated, c.elapsed); got != c.want {
			t.Errorf("gcPercentFor(%d, %d, %s) = %d, want %d", c.live, c.allocated, c.elapsed, got, c.want)
		}
	}
}

// TestApplyGCPercent: without GOGC the pump starts at Go's default
// percent; after collections that follow fast allocation the percent comes
// from the live heap, after a quiet spell it is Go's default again; with
// GOGC (any value) it is left alone.
func TestApplyGCPercent(t *testing.T) {
	for _, env := range []string{"100", "off"} {
		set := func(p int) int { t.Errorf("GOGC=%s: percent set to %d", env, p); return 100 }
		if applyGCPercent(logr.Discard(), func(k string) string {
			if k == "GOGC" {
				return env
			}
			return ""
		}, set) {
			t.Errorf("GOGC=%s: tuning started", env)
		}
	}

	var (
		mu  sync.Mutex
		got []int
	)
	set := func(p int) int {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
		return 100
	}
	last := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return got[len(got)-1], len(got)
	}
	// The live heap this test keeps (above the headroom's quarter, so the
	// tuned percent is below gcMaxPercent).
	live := make([]byte, gcHeadroom/2+gcHeadroom/8)
	if !applyGCPercent(logr.Discard(), func(string) string { return "" }, set) {
		t.Fatal("tuning not started without GOGC")
	}
	if p, n := last(); n != 1 || p != gcMinPercent {
		t.Errorf("percent at start: set %v, want [%d]", got, gcMinPercent)
	}
	want := gcPercentFor(uint64(len(live)), 1<<30, time.Second)
	// Busy: tens of megabytes allocated between collections milliseconds
	// apart.
	deadline := time.Now().Add(10 * time.Second)
	for {
		for range 64 {
			sink = make([]byte, 1<<20)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
		// The test binary's own live heap adds a little to the slice.
		if p, n := last(); n > 1 && p <= want && p >= want*3/4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after busy collections: percents set %v, want the last near %d (live heap %d)", got, want, len(live))
		}
	}
	// Quiet: collections a quarter second apart with next to nothing
	// allocated between them.
	deadline = time.Now().Add(10 * time.Second)
	for {
		time.Sleep(250 * time.Millisecond)
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if p, _ := last(); p == gcMinPercent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after quiet collections: percents set %v, want the last %d", got, gcMinPercent)
		}
	}
	runtime.KeepAlive(live)
}

// sink keeps the busy phase's allocations from being optimised away.
var sink []byte
