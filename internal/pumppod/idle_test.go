package pumppod_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// tickingQueueLoops counts the goroutines of the process in a work queue's
// unfinished-work loop: a ticker that wakes every 500 ms whether or not the
// queue holds anything (controller-runtime's priority queue and client-go's
// queue run one whenever the queue has metrics).
func tickingQueueLoops() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, ".updateUnfinishedWorkLoop(") {
			count++
		}
	}
	return count
}

// An idle pump pod's reconciler queue does not wake twice a second: the
// pod's one FlightFeed is queued on a change and on the Secret resync, and
// the queue's only timer is its 10 s heartbeat. (controller-runtime's
// default queue refreshed its unfinished-work gauges every 500 ms, two of
// an idle standby's three wake-ups a second.)
func TestIdlePodQueueDoesNotTick(t *testing.T) {
	h := newHarness(t)
	before := tickingQueueLoops()
	rep := h.startReplica("replica-a")
	await.Eventually(t, "the replica Ready", waitLong, func() (bool, string) {
		code, body := httpGet(t, "http://"+rep.probe+"/readyz")
		return code == 200, body
	})
	key := h.feed("pek")
	h.secrets(key.Name)
	h.waitReady(key)
	if after := tickingQueueLoops(); after > before {
		t.Fatalf("a pump pod started %d work queue loop(s) that tick every 500 ms while idle", after-before)
	}
}
