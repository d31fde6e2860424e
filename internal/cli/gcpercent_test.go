package cli

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, gcMaxPercent},
		{1 << 20, gcMaxPercent},
		{gcHeadroom / 4, gcMaxPercent},
		{gcHeadroom / 2, 200},
		{gcHeadroom * 2 / 3, 150},
		{gcHeadroom, gcMinPercent},
		{300 << 20, gcMinPercent},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// TestApplyGCPercent: without GOGC the pump's percent is set at once and
// again after collections, from the live heap; with GOGC (any value) it is
// left alone.
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
	// The live heap this test keeps (above the headroom's quarter, so the
	// tuned percent is below the start's gcMaxPercent).
	live := make([]byte, gcHeadroom/2+gcHeadroom/8)
	if !applyGCPercent(logr.Discard(), func(string) string { return "" }, set) {
		t.Fatal("tuning not started without GOGC")
	}
	mu.Lock()
	if len(got) != 1 || got[0] != gcMaxPercent {
		t.Errorf("percent at start: set %v, want [%d]", got, gcMaxPercent)
	}
	mu.Unlock()
	want := gcPercentFor(uint64(len(live)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		last := got[len(got)-1]
		n := len(got)
		mu.Unlock()
		// The test binary's own live heap adds a little to the slice.
		if n > 1 && last <= want && last >= want*3/4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after collections: percents set %v, want the last near %d (live heap %d)", got, want, len(live))
		}
	}
	runtime.KeepAlive(live)
}
