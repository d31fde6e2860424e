package pumppod_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// Two deployments on one feed's database (here two FlightFeeds, each with
// its own Lease, on the same PostgreSQL): the second takes the fencing
// epoch and the first, fenced, does not take it back while the second's
// pump renews it — no ping-pong. Its status says Fenced and names the
// holder and its epoch, a Fenced Event says so, flightfeed_pump_fenced is 1.
// Once the holder stops (its FlightFeed deleted) and stays silent for
// FencedHolderSilence, the first takes the feed back.
func TestFencedPumpDoesNotTakeTheFeedBackFromALiveHolder(t *testing.T) {
	h := newHarness(t)
	const maxBackoff = 300 * time.Millisecond
	rep := h.startReplicaWith("replica-a", h.runners.factory, func(o *pumppod.Options) {
		o.RestartBackoff, o.MaxRestartBackoff, o.FencedHolderSilence = 50*time.Millisecond, maxBackoff, 3*time.Second
	})
	h.secrets("pek")
	first := h.feed("pek")
	h.waitReady(first)
	r1 := h.runnerOf("replica-a", 0)

	h.secrets("dup") // the same database and mailbox
	second := h.feed("dup")
	r2 := h.runnerOf("replica-a", r1.epoch)
	if r2.feed.Name != second.Name {
		t.Fatalf("the runner of epoch %d is %s's, want %s's", r2.epoch, r2.feed.Name, second.Name)
	}
	holds := fmt.Sprintf(`pump "replica-a" holds the feed (epoch %d`, r2.epoch)
	fencedNamingHolder := func() (bool, string) {
		ff, err := h.getFeed(first)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionReady))
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Reason == string(v1alpha1.ReasonFenced) && strings.Contains(c.Message, holds), c.Reason + ": " + c.Message
	}
	await.Eventually(t, first.String()+" Fenced, naming the holder", waitLong, fencedNamingHolder)
	h.waitEvent(first, pumppod.ReasonFenced, fmt.Sprintf("(epoch %d)", r2.epoch))

	// Many backoff periods later (what must not happen has no condition
	// to poll): no new runner, the epoch still the second's.
	time.Sleep(10 * maxBackoff)
	for _, r := range h.runners.all() {
		if r.epoch > r2.epoch {
			t.Fatalf("a runner of %s took epoch %d from the live holder (epoch %d)", r.feed.Name, r.epoch, r2.epoch)
		}
	}
	if r2.stopped() {
		t.Fatal("the holder's runner was stopped")
	}
	if ok, why := fencedNamingHolder(); !ok {
		t.Fatalf("status of %s: %s", first, why)
	}
	db, err := store.Open(h.ctx(), h.pgDSN, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if cur, err := db.CurrentHolder(h.ctx()); err != nil || cur.Epoch != r2.epoch {
		t.Fatalf("epoch holder %+v (%v), want epoch %d", cur, err, r2.epoch)
	}
	if mf := gather(t, rep.registry, "flightfeed_pump_fenced"); mf == nil || !fencedGauge(mf, first.Name) {
		t.Fatalf("flightfeed_pump_fenced of %s is not 1: %v", first, mf)
	}

	// The second deployment goes away: once its pump is silent, the first
	// takes the feed back.
	ff, err := h.getFeed(second)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(h.ctx(), ff); err != nil {
		t.Fatal(err)
	}
	r3 := h.runnerOf("replica-a", r2.epoch)
	if r3.feed.Name != first.Name {
		t.Fatalf("the runner of epoch %d is %s's, want %s's", r3.epoch, r3.feed.Name, first.Name)
	}
	h.waitReady(first)
}

// fencedGauge reports whether mf holds 1 for the feed named feed.
func fencedGauge(mf *dto.MetricFamily, feed string) bool {
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "feed" && l.GetValue() == feed {
				return m.GetGauge().GetValue() == 1
			}
		}
	}
	return false
}
