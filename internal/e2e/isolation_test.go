package e2e_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/fakemysql"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// pumpPodMemoryLimit is the chart's default memory limit of a pump pod.
const pumpPodMemoryLimit = 256 << 20

// TestRogueMailboxHurtsOnlyItsFeed (isolation): feed pek's
// mailbox DSN points at a server that answers every connection with one
// packet claiming 1 GiB; feed can is healthy. Each feed's pump pod runs in
// its own memory cgroup of the pod limit. pek's pump reports its mailbox
// failing, naming the bound, and is never OOM-killed; can's pump commits
// and publishes rows that arrive all the while.
func TestRogueMailboxHurtsOnlyItsFeed(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: two feeds' pump processes in memory cgroups")
	}
	e := newEnv(t)
	rogue := fakemysql.Start(t, "", nil, fakemysql.Flood(1<<30, fakemysql.AtGreeting))
	bad := newWorld(t, "pek")
	bad.MailboxDSN = "root@tcp(" + rogue.Addr() + ")/mbx"
	good := newWorld(t, "can")
	lt := leaseTimings{duration: 4 * time.Second, renew: 3 * time.Second, retry: 500 * time.Millisecond}
	cgBad, cgGood := proctest.MemoryCgroup(t, pumpPodMemoryLimit), proctest.MemoryCgroup(t, pumpPodMemoryLimit)
	badPod := e.startPumpIn(cgBad, "pek-pump-a", "pek", lt)
	goodPod := e.startPumpIn(cgGood, "can-pump-a", "can", lt)
	badKey, goodKey := e.apply(bad), e.apply(good)

	day := good.waitRequest()
	rows := workload(day, good.loc)
	base := time.Now().UTC().Truncate(time.Second)
	// The first half before pek's trouble is seen, the second while it
	// goes on: can never waits for pek.
	good.put(rows, base, 0, len(rows)/2)
	await.Eventually(t, "pek's mailbox reported failing, naming the bound", waitLong, func() (bool, string) {
		c := findCondition(e.feedObject(badKey), v1alpha1.ConditionMailboxReachable)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(v1alpha1.ReasonUnreachable) &&
			strings.Contains(c.Message, "mailbox: server sent a packet of more than"), fmt.Sprintf("%+v", c)
	})
	failing := rogue.Stats().Conns
	good.put(rows, base, len(rows)/2, len(rows))
	good.waitDrained(len(rows))
	if n := good.Count(`SELECT COUNT(*) FROM msg_event_record`); n == 0 {
		t.Fatal("can published nothing")
	}
	// pek keeps failing the same way while can runs: new connections after
	// the failure was reported, each refused at the bound (how much each
	// reads depends on the read caps the pod's memory limit leaves, so the
	// connections are counted, not the bytes).
	await.Eventually(t, "pek's pump to keep retrying", waitLong, func() (bool, string) {
		st := rogue.Stats()
		return st.Conns >= failing+2, fmt.Sprintf("%d connections when the failure was reported; now %+v", failing, st)
	})
	for _, p := range []struct {
		name string
		pod  *manager
		cg   string
	}{{"pek", badPod, cgBad}, {"can", goodPod, cgGood}} {
		if p.pod.Exited() {
			t.Fatalf("%s's pump exited:\n%s", p.name, proctest.Tail(p.pod.Output(), 40))
		}
		kills, peak := proctest.OOMKills(t, p.cg), proctest.CgroupPeak(t, p.cg)
		t.Logf("%s's pump pod: peak %d MiB of its %d MiB limit (VmHWM %d MiB), %d OOM kills", p.name, peak>>20,
			pumpPodMemoryLimit>>20, vmHWM(t, p.pod)>>20, kills)
		if kills > 0 {
			t.Fatalf("%s's pump was OOM-killed %d times", p.name, kills)
		}
	}
	if ff := e.feedObject(goodKey); findCondition(ff, v1alpha1.ConditionReady) == nil ||
		findCondition(ff, v1alpha1.ConditionReady).Status != metav1.ConditionTrue {
		t.Fatalf("can not Ready: %+v", ff.Status.Conditions)
	}
}

// vmHWM is the process's peak resident memory (0 when it cannot be read).
func vmHWM(t *testing.T, m *manager) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.Pid()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
