//go:build reliability

package partition_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/faultproxy"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// Lease timings of the managers: a leader that cannot renew is replaced
// after a few seconds.
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// startPump runs `flightfeed pump --feed NS/NAME` as id on the kubeconfig:
// one of the feed's pump pods, as the operator's Deployment runs it.
func startPump(t *testing.T, id, kubeconfig string, feed types.NamespacedName) *proctest.Proc {
	t.Helper()
	return start(t, id, []string{"KUBECONFIG=" + kubeconfig}, "pump",
		"--feed", feed.String(),
		"--kubeconfig", kubeconfig,
		"--identity", id,
		"--lease-duration", leaseDuration.String(),
		"--renew-deadline", renewDeadline.String(),
		"--retry-period", retryPeriod.String(),
		"--status-interval", "1s",
		"--metrics-bind-address", loopback.FreeAddr(t),
		"--metrics-secure=false",
		"--health-probe-bind-address", loopback.FreeAddr(t),
		"--api-bind-address", "0",
	)
}

// TestLeaderCutOffFromTheAPIServer: manager-a leads the feed and reaches
// the API server through a proxy; manager-b reaches it directly. The
// proxy freezes (nothing forwarded, connections held) while manager-a
// still reaches PostgreSQL and Kafka, and rows keep arriving (manager-a
// must be seen committing some of them after the cut, or the test proves
// nothing): manager-b takes the Lease and a newer fencing epoch;
// manager-a stops its pump
// once it cannot renew, commits nothing after manager-b's first write,
// and nothing it produced is visible to a read_committed consumer after
// manager-b's first record of a partition; manager-b drains the rest. The
// final state equals the clean run's.
func TestLeaderCutOffFromTheAPIServer(t *testing.T) {
	t.Parallel()
	want := reference(t)
	rows, base := workload(t)
	c := kubetest.Client(t, shared.RestConfig)
	ns := "partition-" + strings.ToLower(utilrand.String(6))
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	f := newFeed(t, "split")
	api, err := faultproxy.Start(apiAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)

	a := startPump(t, "manager-a", proctest.KubeconfigVia(t, shared.RestConfig, api.Addr()), types.NamespacedName{Namespace: ns, Name: "split"})
	key := applyFeed(t, c, ns, f)
	var epochA int64
	await.EventuallyEvery(t, "manager-a to lead the feed", waitLong, poll, func() (bool, string) {
		lh := leaseHolder(t, c, key)
		ph, ep := f.lock()
		epochA = ep
		return lh == "manager-a" && ph == "manager-a", fmt.Sprintf("Lease %q, pipeline_lock %q@%d", lh, ph, ep)
	})
	b := startPump(t, "manager-b", proctest.KubeconfigVia(t, shared.RestConfig, apiAddr(t)), key)

	third := len(rows) / 3
	put := func(from, to int) {
		for i := from; i < to; i += 50 {
			f.Put(rows[i:min(i+50, to)], base.Add(time.Duration(i)*time.Millisecond))
		}
	}
	put(0, third)
	await.EventuallyEvery(t, "manager-a to process the first third", waitLong, poll, func() (bool, string) {
		n := f.Processed()
		return n >= third, fmt.Sprint(n)
	})

	// The partition: manager-a's API server connection freezes; it still
	// reaches PostgreSQL and Kafka, and rows keep arriving.
	if err := api.SetMode(faultproxy.Stall); err != nil {
		t.Fatal(err)
	}
	frozeAt := time.Now()
	// The last audited write before the cut: manager-a must commit after
	// it (below), or it was not writing when cut off and its stop proves
	// nothing.
	var cutMark int64
	if audited := f.Audit(); len(audited) > 0 {
		cutMark = audited[len(audited)-1].ID
	}
	put(third, 2*third)
	var epochB int64
	await.EventuallyEvery(t, "manager-b to take the Lease and a newer epoch", waitLong, poll, func() (bool, string) {
		lh := leaseHolder(t, c, key)
		ph, ep := f.lock()
		epochB = ep
		return lh == "manager-b" && ph == "manager-b" && ep > epochA, fmt.Sprintf("Lease %q, pipeline_lock %q@%d", lh, ph, ep)
	})
	await.EventuallyEvery(t, "manager-a to stop its pump", waitLong, poll, func() (bool, string) {
		return len(a.Logs("lost the lease; pump stopped")) > 0, "not logged yet"
	})
	put(2*third, len(rows))
	f.waitSettled()

	// The partition heals: manager-a answers again and must not take the
	// feed back from a live leader.
	if err := api.SetMode(faultproxy.Pass); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	time.Sleep(2 * leaseDuration)
	if lh, ph := leaseHolder(t, c, key), func() string { h, _ := f.lock(); return h }(); lh != "manager-b" || ph != "manager-b" {
		t.Errorf("after the partition healed: Lease %q, pipeline_lock %q; want manager-b for both", lh, ph)
	}
	f.waitSettled()
	b.Stop()
	a.Stop()

	// PostgreSQL: every fenced write by its writer of the moment; nothing
	// by manager-a from manager-b's first write on.
	firstB := int64(-1)
	var byA, byB, byAWhileCut int
	for _, w := range f.Audit() {
		switch w.App {
		case "manager-b":
			byB++
			if firstB < 0 {
				firstB = w.ID
			}
		case "manager-a":
			byA++
			if w.ID > cutMark && w.Table == "proc_state" {
				byAWhileCut++
			}
			if firstB >= 0 || w.Epoch != epochA {
				t.Errorf("manager-a wrote after manager-b took the feed (epoch %d): %s", epochB, w)
			}
		}
	}
	if byA == 0 || byB == 0 {
		t.Fatalf("writes: manager-a %d, manager-b %d: both must have written for the test to prove anything", byA, byB)
	}
	// manager-a was writing when it was cut off: it committed messages
	// that arrived after the cut, before it stopped. Without that, a
	// leader that stopped for any reason would pass.
	if byAWhileCut == 0 {
		t.Fatalf("manager-a committed no message after it was cut off from the API server (audit mark #%d): it was not writing when cut, the test proves nothing", cutMark)
	}

	// Kafka: per partition, nothing of manager-a's producer epoch after
	// the first record of manager-b's.
	prodA, prodB := producerOf(t, a), producerOf(t, b)
	type part struct {
		topic string
		p     int32
	}
	seenB := map[part]int64{}
	var fromA, fromB int
	for _, r := range committedRecords(t, f.Brokers, check.StateTopic, check.NoticeTopic) {
		k := part{r.Topic, r.Partition}
		switch {
		case r.ProducerID == prodB.id && r.ProducerEpoch == prodB.epoch:
			fromB++
			if _, ok := seenB[k]; !ok {
				seenB[k] = r.Offset
			}
		case r.ProducerID == prodA.id && r.ProducerEpoch == prodA.epoch:
			fromA++
			if off, ok := seenB[k]; ok {
				t.Errorf("%s/%d offset %d: a record of manager-a's producer (epoch %d) after manager-b's first at %d",
					r.Topic, r.Partition, r.Offset, prodA.epoch, off)
			}
		}
	}
	if fromB == 0 {
		t.Errorf("no committed record of manager-b's producer (id %d, epoch %d)", prodB.id, prodB.epoch)
	}

	r := check.Compare(want, check.Read(t, f.Feed))
	r.Assert(t, "leader cut off from the API server")
	check.Record(t, check.Summary{Scenario: "partition/leader-cut-off-from-api-server", Runs: 2, Faults: 1, Messages: len(rows), Counts: r.Counts})
	t.Logf("manager-a (epoch %d) frozen off the API server at %s, committed %d messages after; manager-b took epoch %d; fenced writes: manager-a %d, manager-b %d; "+
		"committed records: manager-a's producer %d, manager-b's %d; healed %s after the freeze, manager-b kept the feed",
		epochA, frozeAt.Format(time.TimeOnly), byAWhileCut, epochB, byA, byB, fromA, fromB, healed.Sub(frozeAt).Round(time.Second))
}

// applyFeed creates the feed's Secrets and FlightFeed in ns.
func applyFeed(t *testing.T, c client.Client, ns string, f *feed) types.NamespacedName {
	t.Helper()
	return proctest.ApplyFeed(t, c, ns, "split", feedtest.Feed{MailboxDSN: f.MailboxDSN, DatabaseDSN: f.DatabaseDSN, Brokers: f.Brokers,
		PollInterval: "20ms", BatchSize: 8, Pump: "backoffInitial: 50ms, backoffMax: 1s"})
}

// leaseHolder is the holder of the feed's Lease ("" while free).
func leaseHolder(t *testing.T, c client.Client, key types.NamespacedName) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, _ := proctest.LeaseHolder(ctx, c, key.Namespace, pumppod.FeedLeaseName(key))
	return h
}

type producer struct {
	id    int64
	epoch int16
}

var producerLine = regexp.MustCompile(`"producer_id":(\d+),"producer_epoch":(\d+)`)

// producerOf is the transactional producer the manager's dispatcher
// initialised last, read from its log's raw text (a producer id does not
// fit a JSON number's float64).
func producerOf(t *testing.T, p *proctest.Proc) producer {
	t.Helper()
	var last []string
	for _, line := range strings.Split(p.Output(), "\n") {
		if strings.Contains(line, `"transactional producer initialised"`) {
			if m := producerLine.FindStringSubmatch(line); m != nil {
				last = m
			}
		}
	}
	if last == nil {
		t.Fatalf("%s never initialised a transactional producer", p.ID())
	}
	id, err := strconv.ParseInt(last[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := strconv.ParseInt(last[2], 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return producer{id: id, epoch: int16(epoch)}
}
