package pumppod_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

const (
	day9  = "2026-09-09"
	day10 = "2026-09-10"
)

// deliverRESP makes the feed's pump apply a RESP: a full-day snapshot of
// day answering the day's request, mailbox row msgID.
//
// With the test runner the snapshot goes straight into the runner's fenced
// transaction; with the real pump this helper inserts the RESP into the
// mailbox (CMINMSGS) and the assertions below stay as they are.
func (h *harness) deliverRESP(r *testRunner, msgID int64, day string, records ...store.SnapshotRecord) {
	h.t.Helper()
	r.applySnapshot(h.t, store.Meta{MessageID: msgID, Type: "SCHD", Styp: "RESP"},
		store.Snapshot{FullDay: true, Day: day, Records: records})
}

// ledger reads the feed database's ledger with a connection of its own.
func (h *harness) ledger() map[string]store.LedgerDay {
	h.t.Helper()
	db, err := store.Open(h.ctx(), h.pgDSN, store.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	days, err := db.Ledger(h.ctx())
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]store.LedgerDay{}
	for _, d := range days {
		out[d.Day] = d
	}
	return out
}

// waitDay waits until the day's FlightFeedDay mirrors the ledger row.
func (h *harness) waitDay(key types.NamespacedName, want store.LedgerDay) *v1alpha1.FlightFeedDay {
	h.t.Helper()
	var day v1alpha1.FlightFeedDay
	await.Eventually(h.t, "FlightFeedDay "+want.Day+" to mirror the ledger", waitLong, func() (bool, string) {
		err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: key.Namespace, Name: pumppod.DayName(key.Name, want.Day)}, &day)
		if err != nil {
			return false, err.Error()
		}
		s := day.Status
		return s.Version == want.Version && s.Flights == want.Flights && s.LastMessageID == want.LastMessageID &&
				s.LastCommitAt != nil && s.LastCommitAt.Time.Equal(want.LastCommitAt.Truncate(time.Second)),
			fmt.Sprintf("%+v, ledger %+v", s, want)
	})
	return &day
}

// TestFeedRunsAndMirrorsTheLedger is the acceptance path: a FlightFeed and
// its Secrets are applied, the elected pump runs against the real
// PostgreSQL, MariaDB and Kafka, the status becomes Ready with pump and
// ledger figures, a RESP snapshot yields a FlightFeedDay whose version is
// the ledger's, `kubectl get` (the Table API) prints the columns, and a day
// leaving the ledger takes its FlightFeedDay with it.
func TestFeedRunsAndMirrorsTheLedger(t *testing.T) {
	h := newHarness(t)
	rep := h.startReplica("replica-a")
	h.secrets("pek")
	key := h.feed("pek")

	ff := h.waitReady(key)
	if p := ff.Status.Pump; p == nil || p.Holder != "replica-a" || p.Epoch <= 0 || p.Since == nil || p.Lag == nil || p.Counts == nil {
		t.Fatalf("pump status %+v", ff.Status.Pump)
	}
	for _, ct := range []v1alpha1.ConditionType{v1alpha1.ConditionPumpRunning, v1alpha1.ConditionMailboxReachable,
		v1alpha1.ConditionDatabaseReachable, v1alpha1.ConditionKafkaReachable} {
		if c := meta.FindStatusCondition(ff.Status.Conditions, string(ct)); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != ff.Generation {
			t.Fatalf("%s: %+v", ct, c)
		}
	}
	if c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionDegraded)); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("Degraded: %+v", c)
	}
	// The pump pods' objects are owned: no finalizer holds a deletion.
	if len(ff.Finalizers) != 0 {
		t.Fatalf("finalizers %v", ff.Finalizers)
	}
	lease, err := h.lease(key)
	// In the feed's namespace, owned by the feed, and naming it.
	if err != nil || ptr.Deref(lease.Spec.HolderIdentity, "") != "replica-a" || len(lease.OwnerReferences) != 1 ||
		lease.OwnerReferences[0].UID != ff.UID ||
		lease.Annotations[pumppod.AnnotationLeaseFeed] != key.String() || lease.Labels[pumppod.LabelLeaseFeed] != "true" {
		t.Fatalf("lease %+v: %v", lease, err)
	}
	h.waitEvent(key, pumppod.ReasonLeaderElected, "replica-a")

	runner := h.runnerOf("replica-a", 0)
	if runner.epoch != ff.Status.Pump.Epoch {
		t.Fatalf("runner epoch %d, status epoch %d", runner.epoch, ff.Status.Pump.Epoch)
	}
	if runner.feed.Spec.Mailbox.BatchSize != 200 || runner.feed.Spec.Retention.LedgerDays == nil || runner.feed.Location.String() != "Asia/Shanghai" {
		t.Fatalf("the runner got an unresolved feed: %+v", runner.feed.Spec)
	}
	if runner.feed.Secrets.DatabaseDSN != h.pgDSN || runner.feed.Secrets.MailboxDSN != h.mboxDSN {
		t.Fatal("the runner did not get the DSNs of the Secrets")
	}

	// A RESP for 9/9 with three flights, then a second one with two.
	h.deliverRESP(runner, 101, day9, storetest.Record(1, "CA1", day9), storetest.Record(2, "CA2", day9), storetest.Record(3, "CA3", day9))
	first := h.ledger()[day9]
	if first.Version != 1 || first.Flights != 3 {
		t.Fatalf("ledger after the first RESP: %+v", first)
	}
	day := h.waitDay(key, first)
	if day.Spec.Day != day9 || day.Spec.FeedName != "pek" || day.Labels[v1alpha1.LabelFeed] != "pek" || day.Labels[v1alpha1.LabelDay] != day9 {
		t.Fatalf("day object %+v", day.ObjectMeta)
	}
	if !metav1.IsControlledBy(day, ff) {
		t.Fatalf("day %s is not owned by its FlightFeed: %+v", day.Name, day.OwnerReferences)
	}
	h.deliverRESP(runner, 102, day9, storetest.Record(1, "CA1", day9), storetest.Record(2, "CA2", day9))
	h.deliverRESP(runner, 103, day10, storetest.Record(4, "CA4", day10))
	ledger := h.ledger()
	if ledger[day9].Version != 2 || ledger[day9].Flights != 2 || ledger[day10].Version != 1 {
		t.Fatalf("ledger %+v", ledger)
	}
	h.waitDay(key, ledger[day9])
	h.waitDay(key, ledger[day10])

	// The status carries the ledger and the pump's figures.
	await.Eventually(t, "the status to list both days", waitLong, func() (bool, string) {
		ff, err := h.getFeed(key)
		if err != nil {
			return false, err.Error()
		}
		s := ff.Status
		ok := len(s.OperationDays) == 2 && s.OperationDays[0].Day == day9 && s.OperationDays[0].Version == 2 &&
			s.OperationDays[0].Flights == 2 && s.OperationDays[0].LastMessageID == 102 && s.OperationDays[1].Day == day10 &&
			s.LatestSnapshot != nil && s.LatestSnapshot.Day == day10 && s.LatestSnapshot.Version == 1 &&
			s.Pump != nil && s.Pump.LastProcessedID == 103 && s.Pump.Counts != nil && s.Pump.Counts.Succeeded == 3 &&
			s.Outbox != nil && s.Backfill != nil
		return ok, fmt.Sprintf("days %+v latest %+v pump %+v", s.OperationDays, s.LatestSnapshot, s.Pump)
	})

	// kubectl get flightfeeds / flightfeeddays: server-side printing.
	checkTable(t, h.ns, "flightfeeds", "pek", map[string]string{
		"Ready": "True", "Leader": "replica-a", "Lag": "0s", "Latest-Day": day10, "Version": "1", "Reason": "Running",
	}, []string{"Name", "Ready", "Leader", "Lag", "Latest-Day", "Version", "Pods", "Age", "Reason", "Message"}, []string{"Reason", "Message"})
	checkTable(t, h.ns, "flightfeeddays", pumppod.DayName("pek", day9), map[string]string{
		"Day": day9, "Version": "2", "Flights": "2", "Last-Message": "102", "Feed": "pek",
	}, []string{"Name", "Day", "Version", "Flights", "Last-Message", "Committed", "Age", "Feed", "Verified", "Verified-At"}, []string{"Feed", "Verified", "Verified-At"})

	// Metrics of the leader.
	wantMetric(t, rep, "flightfeed_leader", map[string]string{"feed": "pek"}, 1)
	wantMetric(t, rep, "flightfeed_pump_running", map[string]string{"feed": "pek"}, 1)
	wantMetric(t, rep, "flightfeed_snapshot_version", map[string]string{"feed": "pek", "day": day9}, 2)
	wantMetric(t, rep, "flightfeed_messages_total", map[string]string{"feed": "pek", "type": "SCHD", "styp": "RESP", "result": "SUCCEEDED"}, 3)
	wantMetric(t, rep, "flightfeed_transaction_duration_seconds", map[string]string{"feed": "pek"}, 3)
	wantMetric(t, rep, "flightfeed_queue_depth", map[string]string{"feed": "pek"}, 0)

	// Retention: an empty RESP empties 9/9, the ledger cleanup removes the
	// day, and its FlightFeedDay goes with it.
	h.deliverRESP(runner, 104, day9)
	err = runner.inTx(func(ctx context.Context, tx *store.Tx) error {
		days, err := tx.PruneLedger(ctx, day10)
		if err == nil && !slices.Equal(days, []string{day9}) {
			err = fmt.Errorf("pruned %v", days)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, "the FlightFeedDay of 9/9 to go with the ledger", waitLong, func() (bool, string) {
		var days v1alpha1.FlightFeedDayList
		if err := h.c.List(h.ctx(), &days, client.InNamespace(h.ns), client.MatchingLabels{v1alpha1.LabelFeed: "pek"}); err != nil {
			return false, err.Error()
		}
		var names []string
		for _, d := range days.Items {
			names = append(names, d.Spec.Day)
		}
		return slices.Equal(names, []string{day10}), strings.Join(names, ",")
	})

	wantNoMetric(t, rep, "flightfeed_snapshot_version", map[string]string{"feed": "pek", "day": day9})
	wantMetric(t, rep, "flightfeed_snapshot_version", map[string]string{"feed": "pek", "day": day10}, 1)

	// Probes on a healthy leader.
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet(t, "http://"+rep.probe+path); code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
}

// checkTable reads resource through the Table API (what kubectl get
// prints) and checks the row of name; wide names the columns only -o wide
// shows (priority 1).
func checkTable(t *testing.T, ns, resource, name string, want map[string]string, columns, wide []string) {
	t.Helper()
	cfg := rest.CopyConfig(restCfg)
	cfg.GroupVersion = &v1alpha1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, fmt.Sprintf("kubectl get %s to print %v", resource, want), waitLong, func() (bool, string) {
		raw, err := rc.Get().Namespace(ns).Resource(resource).
			SetHeader("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1").DoRaw(t.Context())
		if err != nil {
			return false, err.Error()
		}
		var table metav1.Table
		if err := json.Unmarshal(raw, &table); err != nil {
			return false, err.Error()
		}
		var names []string
		for _, c := range table.ColumnDefinitions {
			names = append(names, c.Name)
			if slices.Contains(wide, c.Name) != (c.Priority == 1) {
				t.Fatalf("column %s has priority %d", c.Name, c.Priority)
			}
		}
		if !slices.Equal(names, columns) {
			t.Fatalf("columns %v, want %v", names, columns)
		}
		for _, row := range table.Rows {
			if fmt.Sprint(row.Cells[0]) != name {
				continue
			}
			got := map[string]string{}
			for i, c := range table.ColumnDefinitions {
				got[c.Name] = fmt.Sprint(row.Cells[i])
			}
			for k, v := range want {
				if got[k] != v {
					return false, fmt.Sprintf("%v", got)
				}
			}
			return got["Age"] != "" && got["Age"] != "<nil>", fmt.Sprintf("%v", got)
		}
		return false, "no row " + name
	})
}

// wantMetric waits until the replica's series with labels has value (the
// sample count, for a histogram).
func wantMetric(t *testing.T, r *replica, name string, labels map[string]string, want float64) {
	t.Helper()
	wantMetricFunc(t, r, name, labels, fmt.Sprint(want), func(v float64) bool { return v == want })
}

// wantMetricFunc waits until the replica's series with labels has a value
// ok accepts.
func wantMetricFunc(t *testing.T, r *replica, name string, labels map[string]string, desc string, ok func(float64) bool) {
	t.Helper()
	await.Eventually(t, fmt.Sprintf("%s%v %s", name, labels, desc), waitLong, func() (bool, string) {
		values, err := series(r, name, labels)
		if err != nil {
			return false, err.Error()
		}
		if values == nil {
			return false, "no series " + name
		}
		var seen []string
		for _, v := range values {
			if ok(v) {
				return true, ""
			}
			seen = append(seen, fmt.Sprint(v))
		}
		return false, strings.Join(seen, ",")
	})
}

// wantNoMetric waits until the replica has no series name with labels.
func wantNoMetric(t *testing.T, r *replica, name string, labels map[string]string) {
	t.Helper()
	await.Eventually(t, fmt.Sprintf("no %s%v", name, labels), waitLong, func() (bool, string) {
		values, err := series(r, name, labels)
		if err != nil {
			return false, err.Error()
		}
		return len(values) == 0, fmt.Sprint(values)
	})
}

// series gathers the values of the replica's series name with labels (the
// sample count, for a histogram); nil when there is none.
func series(r *replica, name string, labels map[string]string) ([]float64, error) {
	families, err := r.registry.Gather()
	if err != nil {
		return nil, err
	}
	var values []float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				values = append(values, m.GetGauge().GetValue()+m.GetCounter().GetValue()+float64(m.GetHistogram().GetSampleCount()))
			}
		}
	}
	return values, nil
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestFailoverFencesTheOldEpoch runs two replicas: one leads; when it stops
// the other takes over with a newer epoch, and the old epoch can no longer
// commit. When the Lease is taken from the holder, its pump is cancelled.
func TestFailoverFencesTheOldEpoch(t *testing.T) {
	if testing.Short() {
		t.Skip("failover on 2 s Leases")
	}
	h := newHarness(t)
	replicas := map[string]*replica{"replica-a": h.startReplica("replica-a"), "replica-b": h.startReplica("replica-b")}
	h.secrets("pek")
	key := h.feed("pek")

	ff := h.waitReady(key)
	first := ff.Status.Pump.Holder
	other := "replica-a"
	if first == "replica-a" {
		other = "replica-b"
	}
	r1 := h.runnerOf(first, 0)
	for _, r := range h.runners.all() {
		if r.identity == other {
			t.Fatalf("%s built a runner while %s leads", other, first)
		}
	}

	// The holder goes away (rolling update): it stops its pump, steps
	// down and releases the Lease; the other replica takes over.
	replicas[first].stop(t)
	if !r1.stopped() {
		t.Fatal("the stopped replica's pump still runs")
	}
	r2 := h.runnerOf(other, r1.epoch)
	await.Eventually(t, other+" to report", waitLong, func() (bool, string) {
		ff, err := h.getFeed(key)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionReady))
		return ff.Status.Pump != nil && ff.Status.Pump.Holder == other && ff.Status.Pump.Epoch == r2.epoch &&
			c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v %+v", ff.Status.Pump, c)
	})

	// The old epoch cannot commit any more.
	db, err := store.Open(h.ctx(), h.pgDSN, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if tx, err := db.Begin(h.ctx(), r1.epoch); !errors.Is(err, store.ErrFenced) {
		if tx != nil {
			_ = tx.Rollback(h.ctx())
		}
		t.Fatalf("a transaction of epoch %d (current %d) began: %v", r1.epoch, r2.epoch, err)
	}

	// Someone else takes the Lease (as a replica would after a network
	// partition): the holder sees it at its next renewal and cancels its
	// pump at once.
	// The holder renews meanwhile: a renewal between the read and the
	// write is a conflict, and the intruder reads again.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := h.lease(key)
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity = ptr.To("intruder")
		lease.Spec.RenewTime, lease.Spec.AcquireTime = &now, &now
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](2)
		return h.c.Update(h.ctx(), lease)
	}); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, "the holder's pump to be cancelled", waitLong, func() (bool, string) {
		ctx := r2.runContext()
		return ctx != nil && ctx.Err() != nil && r2.stopped(), describe(r2)
	})
	h.waitEvent(key, pumppod.ReasonLeadershipLost, "intruder")
	// The intruder never renews; after the lease duration the replica
	// takes the feed back with a newer epoch, which fences the old one.
	r3 := h.runnerOf(other, r2.epoch)
	if tx, err := db.Begin(h.ctx(), r2.epoch); !errors.Is(err, store.ErrFenced) {
		if tx != nil {
			_ = tx.Rollback(h.ctx())
		}
		t.Fatalf("a transaction of epoch %d (current %d) began: %v", r2.epoch, r3.epoch, err)
	}
	h.waitReady(key)

	// With both replicas up again, deleting the FlightFeed stops the pump
	// wherever it runs and releases the Lease.
	h.startReplica(first)
	ff, err = h.getFeed(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(h.ctx(), ff); err != nil {
		t.Fatal(err)
	}
	h.waitDeletedAndReleased(key, ff.UID, r3)
	for _, r := range h.runners.all() {
		if !r.stopped() {
			t.Fatalf("%s still runs after the deletion", describe(r))
		}
	}
}

// TestSpecChangeRestartsAndDeletionStops: a spec change restarts the pump
// with the new configuration and a new epoch; deleting the FlightFeed
// stops the pump and releases the Lease, which the FlightFeed owns.
func TestSpecChangeRestartsAndDeletionStops(t *testing.T) {
	h := newHarness(t)
	h.startReplica("replica-a")
	h.secrets("pek")
	key := h.feed("pek")
	h.waitReady(key)
	r1 := h.runnerOf("replica-a", 0)

	ff, err := h.getFeed(key)
	if err != nil {
		t.Fatal(err)
	}
	orig := ff.DeepCopy()
	ff.Spec.Mailbox.BatchSize = 50
	if err := h.c.Patch(h.ctx(), ff, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	r2 := h.runnerOf("replica-a", r1.epoch)
	if r2.feed.Spec.Mailbox.BatchSize != 50 {
		t.Fatalf("restarted with batch size %d", r2.feed.Spec.Mailbox.BatchSize)
	}
	if !r1.stopped() {
		t.Fatal("the old pump still runs")
	}
	ff = h.waitReady(key)
	if ff.Generation != 2 || ff.Status.Pump.Epoch != r2.epoch {
		t.Fatalf("generation %d, status %+v", ff.Generation, ff.Status.Pump)
	}

	// A rotated Secret restarts the pump too, with the new credentials.
	var sec corev1.Secret
	if err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: "pek-mailbox"}, &sec); err != nil {
		t.Fatal(err)
	}
	rotated := h.mboxDSN + "&readTimeout=30s"
	sec.Data = map[string][]byte{"dsn": []byte(rotated)}
	if err := h.c.Update(h.ctx(), &sec); err != nil {
		t.Fatal(err)
	}
	r3 := h.runnerOf("replica-a", r2.epoch)
	if r3.feed.Secrets.MailboxDSN != rotated || !r2.stopped() {
		t.Fatalf("after the rotation: %s, old stopped %v", r3.feed.Secrets.MailboxDSN, r2.stopped())
	}
	ff = h.waitReady(key)

	if err := h.c.Delete(h.ctx(), ff); err != nil {
		t.Fatal(err)
	}
	h.waitDeletedAndReleased(key, ff.UID, r3)
	for _, r := range h.runners.all() {
		if !r.stopped() {
			t.Fatalf("%s still runs", describe(r))
		}
		if n := r.closeCount(); n != 1 {
			t.Fatalf("%s closed %d times, want once", describe(r), n)
		}
	}
}

// TestConfigErrorsAreReported: a missing Secret and an unknown time zone
// (which the CRD cannot check) are reported in the status, naming the
// field; creating the Secret starts the feed.
func TestConfigErrorsAreReported(t *testing.T) {
	h := newHarness(t)
	h.startReplica("replica-a")
	key := h.feed("lhr")

	ff := h.waitCondition(key, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSecretUnavailable)
	c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionReady))
	if !strings.Contains(c.Message, "spec.mailbox.dsnSecretRef.name") || !strings.Contains(c.Message, "lhr-mailbox") {
		t.Fatalf("message %q does not name the field and the Secret", c.Message)
	}
	if pc := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionPumpRunning)); pc == nil || pc.Status != metav1.ConditionFalse {
		t.Fatalf("PumpRunning %+v", pc)
	}
	h.waitEvent(key, pumppod.ReasonConfigInvalid, "lhr-mailbox")
	if len(h.runners.all()) != 0 {
		t.Fatal("a runner was built for a feed without its Secrets")
	}

	// The Secrets appear: the next resync reads them and the feed runs.
	h.secrets("lhr")
	h.waitReady(key)

	// An unknown time zone passes the CRD schema but not the spec check.
	ff, err := h.getFeed(key)
	if err != nil {
		t.Fatal(err)
	}
	orig := ff.DeepCopy()
	ff.Spec.Airport.TimeZone = "Mars/Olympus_Mons"
	if err := h.c.Patch(h.ctx(), ff, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	ff = h.waitCondition(key, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidSpec)
	if c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionReady)); !strings.Contains(c.Message, "spec.airport.timeZone") {
		t.Fatalf("message %q does not name spec.airport.timeZone", c.Message)
	}
	await.Eventually(t, "the pump to stop on the invalid spec", waitLong, func() (bool, string) {
		for _, r := range h.runners.all() {
			if !r.stopped() {
				return false, describe(r)
			}
		}
		return true, ""
	})
}

// TestUnlabelledSecretIsRefused: the operator uses only Secrets labelled
// flightfeed.aero/secret=true. A feed whose Secret lacks the label does not
// start; the status (SecretNotLabeled) and an Event name the Secret and say
// how to label it. Labelling it is noticed at the next resync (nothing
// watches Secrets), and a running feed whose Secret loses the label stops,
// as it does when the Secret is deleted.
func TestUnlabelledSecretIsRefused(t *testing.T) {
	h := newHarness(t)
	h.startReplica("replica-a")
	for name, dsn := range map[string]string{"lgw-mailbox": h.mboxDSN, "lgw-db": h.pgDSN} {
		h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.FeedsAnnotation: "lgw"}, Name: name, Namespace: h.ns}, StringData: map[string]string{"dsn": dsn}})
	}
	key := h.feed("lgw")
	wantRefused := func(secret string, event bool) {
		t.Helper()
		await.Eventually(t, "Ready False (SecretNotLabeled) naming "+secret, waitLong, func() (bool, string) {
			ff, err := h.getFeed(key)
			if err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionReady))
			pc := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionPumpRunning))
			refused := func(c *metav1.Condition) bool {
				return c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(v1alpha1.ReasonSecretNotLabeled)
			}
			named := c != nil && strings.Contains(c.Message, h.ns+"/"+secret) &&
				strings.Contains(c.Message, "kubectl label secret -n "+h.ns+" "+secret+" flightfeed.aero/secret=true")
			return refused(c) && refused(pc) && named, fmt.Sprintf("Ready %+v, PumpRunning %+v", c, pc)
		})
		if event {
			h.waitEvent(key, pumppod.ReasonSecretNotLabeled,
				"secret "+h.ns+"/"+secret+" is not labelled flightfeed.aero/secret=true, and the operator uses only Secrets so labelled: "+
					"kubectl label secret -n "+h.ns+" "+secret+" flightfeed.aero/secret=true")
		}
	}
	label := func(name, value string) {
		t.Helper()
		var sec corev1.Secret
		if err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: name}, &sec); err != nil {
			t.Fatal(err)
		}
		orig := sec.DeepCopy()
		if value == "" {
			delete(sec.Labels, v1alpha1.SecretLabel)
		} else {
			sec.Labels = map[string]string{v1alpha1.SecretLabel: value}
		}
		if err := h.c.Patch(h.ctx(), &sec, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
	}

	wantRefused("lgw-mailbox", true)
	if len(h.runners.all()) != 0 {
		t.Fatal("a runner was built with an unlabelled Secret")
	}
	// The mailbox Secret labelled is seen at a resync; a label of another
	// value is no label.
	label("lgw-mailbox", "true")
	label("lgw-db", "yes")
	wantRefused("lgw-db", false)
	if len(h.runners.all()) != 0 {
		t.Fatal("a runner was built with an unlabelled Secret")
	}
	label("lgw-db", "true")
	h.waitReady(key)
	r1 := h.runnerOf("replica-a", 0)
	if r1.feed.Secrets.MailboxDSN != h.mboxDSN || r1.feed.Secrets.DatabaseDSN != h.pgDSN {
		t.Fatal("the runner did not get the DSNs of the labelled Secrets")
	}

	// The label taken away: the pump stops, as for a deleted Secret.
	label("lgw-mailbox", "")
	// The events API folds a repeated Event (same reason, same FlightFeed)
	// into the first one's series and keeps its note: the status names
	// the Secret.
	wantRefused("lgw-mailbox", false)
	await.Eventually(t, "the pump to stop", waitLong, func() (bool, string) { return r1.stopped(), describe(r1) })
	for _, r := range h.runners.all() {
		if r != r1 {
			t.Fatalf("%s was built with an unlabelled Secret", describe(r))
		}
	}
}

// TestPumpTroubleIsReported: a blocked head makes the feed Degraded, DEAD
// and day-mismatch notices become Events, a failing pump is reported,
// restarted with a new epoch; /readyz stays ready throughout.
func TestPumpTroubleIsReported(t *testing.T) {
	h := newHarness(t)
	rep := h.startReplica("replica-a")
	h.secrets("pek")
	key := h.feed("pek")
	h.waitReady(key)
	r1 := h.runnerOf("replica-a", 0)

	blocked := time.Now().Add(-time.Minute)
	r1.setStatus(func(s *feedrun.Status) {
		s.HeadID, s.HeadBlockedSince, s.HeadLastError = 42, blocked, "connection refused"
	})
	ff := h.waitCondition(key, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonHeadBlocked)
	if ff.Status.Pump.HeadID != 42 || ff.Status.Pump.HeadBlockedSince == nil || ff.Status.Pump.HeadLastError != "connection refused" {
		t.Fatalf("pump %+v", ff.Status.Pump)
	}
	h.waitEvent(key, pumppod.ReasonHeadBlocked, "mailbox row 42")
	since := float64(blocked.UnixMilli()) / 1000
	wantMetricFunc(t, rep, "flightfeed_head_blocked_since_timestamp_seconds", map[string]string{"feed_namespace": h.ns, "feed": "pek"},
		fmt.Sprint(since), func(v float64) bool { return math.Abs(v-since) < 0.01 })
	r1.setStatus(func(s *feedrun.Status) { s.HeadBlockedSince, s.HeadLastError = time.Time{}, "" })
	h.waitCondition(key, v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAsExpected)
	wantNoMetric(t, rep, "flightfeed_head_blocked_since_timestamp_seconds", map[string]string{"feed": "pek"})
	h.waitEvent(key, pumppod.ReasonHeadUnblocked, "mailbox row 42")

	// A day held by its FAILED full-day request: Degraded says so and how
	// to release it, status.pump lists it; released, it goes.
	failedAt := time.Now().Add(-time.Minute).Truncate(time.Second)
	r1.setStatus(func(s *feedrun.Status) {
		s.FailedRequests = []pumpdata.FailedRequest{{Day: "2026-09-11", Rejection: "MIXED_OPERATION_DAYS: records of two days", MessageID: 77, FailedAt: failedAt}}
	})
	ff = h.waitCondition(key, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonRequestFailed)
	if c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionDegraded)); !strings.Contains(c.Message, "full-day request of 2026-09-11 failed") ||
		!strings.Contains(c.Message, "flightfeed rerequest --day D") || !strings.Contains(c.Message, "message 77") {
		t.Fatalf("Degraded %+v", c)
	}
	if f := ff.Status.Pump.FailedRequests; len(f) != 1 || f[0].Day != "2026-09-11" || f[0].MessageID != 77 ||
		f[0].Rejection != "MIXED_OPERATION_DAYS: records of two days" || f[0].FailedAt == nil || !f[0].FailedAt.Time.Equal(failedAt) {
		t.Fatalf("status.pump.failedRequests %+v", f)
	}
	r1.setStatus(func(s *feedrun.Status) { s.FailedRequests = nil })
	ff = h.waitCondition(key, v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAsExpected)
	if f := ff.Status.Pump.FailedRequests; len(f) != 0 {
		t.Fatalf("a released day is still listed: %+v", f)
	}

	r1.addNotice(pump.Notice{Kind: pump.NoticeDead, MessageID: 7, Reason: "PARSE", Detail: "broken closing tag"})
	r1.addNotice(pump.Notice{Kind: pump.NoticeDayMismatch, MessageID: 8, Reason: "PROTOCOL", Detail: "SAME_FLID_ACROSS_OPERATION_DAYS FLID 1"})
	h.waitEvent(key, pumppod.ReasonDeadMessage, "mailbox row 7: PARSE: broken closing tag")
	h.waitEvent(key, pumppod.ReasonDayMismatch, "SAME_FLID_ACROSS_OPERATION_DAYS")
	r1.addNotice(pump.Notice{Kind: pump.NoticePanic, MessageID: 9, Reason: pump.ReasonInternal, Detail: "INTERNAL: panic while applying: boom"})
	h.waitEvent(key, pumppod.ReasonMessagePanicked, "mailbox row 9: INTERNAL: ")

	// The pump fails and cannot be rebuilt for a while: reported, not ready.
	h.runners.setFailBuild(errInjected)
	r1.fail(errInjected)
	ff = h.waitCondition(key, v1alpha1.ConditionPumpRunning, metav1.ConditionFalse, v1alpha1.ReasonPumpFailed)
	if c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionReady)); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, errInjected.Error()) {
		t.Fatalf("Ready %+v", c)
	}
	h.waitEvent(key, pumppod.ReasonPumpFailed, errInjected.Error())
	// Readiness is the manager's: a feed's failed pump is in its
	// conditions and metrics, not in /readyz (nor /healthz).
	wantMetric(t, rep, "flightfeed_pump_running", map[string]string{"feed": "pek"}, 0)
	for _, path := range []string{"/readyz?verbose=1", "/healthz"} {
		if code, body := httpGet(t, "http://"+rep.probe+path); code != http.StatusOK {
			t.Fatalf("a failed pump must not fail %s: %d %s", path, code, body)
		}
	}
	h.runners.setFailBuild(nil)
	r2 := h.runnerOf("replica-a", r1.epoch)
	ff = h.waitReady(key)
	if ff.Status.Pump.Epoch != r2.epoch {
		t.Fatalf("status epoch %d, runner %d", ff.Status.Pump.Epoch, r2.epoch)
	}
	await.Eventually(t, "/readyz to recover", waitLong, func() (bool, string) {
		code, body := httpGet(t, "http://"+rep.probe+"/readyz?verbose=1")
		return code == http.StatusOK, fmt.Sprint(code, body)
	})
}

// TestParkedEventsAreReported: outbox events the brokers refused for good
// raise KafkaDegraded naming the flight and reason, a warning Event, the
// flightfeed_outbox_parked gauge and status.outbox.parked; once none is
// parked the condition clears.
func TestParkedEventsAreReported(t *testing.T) {
	h := newHarness(t)
	rep := h.startReplica("replica-a")
	h.secrets("pek")
	key := h.feed("pek")
	h.waitReady(key)
	r1 := h.runnerOf("replica-a", 0)

	r1.setStatus(func(s *feedrun.Status) {
		s.OutboxParked, s.OutboxParkedTotal = 1, 1
		s.LastParked = &dispatch.Parked{EventID: 31, Kind: store.KindState, FLID: 4711, StateVersion: 12, MessageID: 9,
			Reason: dispatch.ReasonRecordTooLarge, Error: "MESSAGE_TOO_LARGE: The request included a message larger than the max message size the server will accept"}
	})
	ff := h.waitCondition(key, v1alpha1.ConditionKafkaDegraded, metav1.ConditionTrue, v1alpha1.ReasonEventsParked)
	c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionKafkaDegraded))
	if !strings.Contains(c.Message, "flight 4711 at version 12") || !strings.Contains(c.Message, "RecordTooLarge") {
		t.Fatalf("KafkaDegraded: %q", c.Message)
	}
	if ff.Status.Outbox == nil || ff.Status.Outbox.Parked != 1 {
		t.Fatalf("status.outbox: %+v", ff.Status.Outbox)
	}
	h.waitEvent(key, pumppod.ReasonEventParked, "event 31, the state of flight 4711")
	wantMetricFunc(t, rep, "flightfeed_outbox_parked", map[string]string{"feed_namespace": h.ns, "feed": "pek"},
		"1", func(v float64) bool { return v == 1 })

	r1.setStatus(func(s *feedrun.Status) { s.OutboxParked = 0 })
	h.waitCondition(key, v1alpha1.ConditionKafkaDegraded, metav1.ConditionFalse, v1alpha1.ReasonAsExpected)
}

// TestRefusedDSNOptionIsReported: a mailbox Secret whose DSN asks for
// allowAllFiles is reported as InvalidSecret in the status and as a
// ConfigInvalid Event, both naming the Secret and the option and never the
// password, and no pump is built for it.
func TestRefusedDSNOptionIsReported(t *testing.T) {
	const marker = "Zq9Marker"
	h := newHarness(t)
	h.startReplica("replica-a")
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: "rogue"}, Name: "rogue-mailbox", Namespace: h.ns},
		StringData: map[string]string{"dsn": "root:" + marker + "@tcp(127.0.0.1:3306)/mbx?allowAllFiles=true"}})
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: "rogue"}, Name: "rogue-db", Namespace: h.ns},
		StringData: map[string]string{"dsn": h.pgDSN}})
	key := h.feed("rogue")

	ff := h.waitCondition(key, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidSecret)
	c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionReady))
	if !strings.Contains(c.Message, "rogue-mailbox") || !strings.Contains(c.Message, "allowAllFiles=true is refused") {
		t.Fatalf("message %q does not name the Secret and the option", c.Message)
	}
	e := h.waitEvent(key, pumppod.ReasonConfigInvalid, "allowAllFiles=true is refused")
	for _, text := range []string{c.Message, e.Note} {
		if strings.Contains(text, marker) {
			t.Fatalf("the status or the Event shows the password: %s", text)
		}
	}
	if len(h.runners.all()) != 0 {
		t.Fatal("a runner was built for a feed whose mailbox DSN is refused")
	}
}

// waitDeletedAndReleased waits, after the FlightFeed key (uid) was deleted,
// until it is gone and its pump (runner r) stopped — there is no finalizer:
// the pod's supervisor stops the pump when it sees the feed gone — and its
// Lease is released and owned by that FlightFeed, so that the garbage
// collector (which envtest does not run) removes it with the feed.
func (h *harness) waitDeletedAndReleased(key types.NamespacedName, uid types.UID, r *testRunner) {
	h.t.Helper()
	await.Eventually(h.t, "the FlightFeed gone and the pump stopped", waitLong, func() (bool, string) {
		_, err := h.getFeed(key)
		return apierrors.IsNotFound(err) && r.stopped(), fmt.Sprintf("feed: %v, pump stopped: %v", err, r.stopped())
	})
	await.Eventually(h.t, "the Lease released", waitLong, func() (bool, string) {
		lease, err := h.lease(key)
		if err != nil {
			return false, err.Error()
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		return holder == "" && len(lease.OwnerReferences) == 1 && lease.OwnerReferences[0].UID == uid,
			fmt.Sprintf("holder %q owners %+v", holder, lease.OwnerReferences)
	})
}
