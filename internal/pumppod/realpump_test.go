package pumppod_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// feedToday creates the example FlightFeed of docs/first-feed.md named name with the request
// horizon narrowed to today (airport-local): the pump asks for one day.
func (h *harness) feedToday(name string) types.NamespacedName {
	h.t.Helper()
	return h.feed(name, "horizon: {from: 0, to: 1}", "horizon: {from: 0, to: 0}")
}

// pumpRequest opens this test's mailbox (closed when the test ends) and
// waits for the elected pump's full-day request of a feedToday feed. It
// returns the mailbox, the feed's time zone (the SPEC manifest's
// Asia/Shanghai) and the day asked for, which must be today there: today
// when the wait began or, across midnight, when it ended.
func (h *harness) pumpRequest() (mbox *sql.DB, loc *time.Location, day string) {
	h.t.Helper()
	mbox, err := sql.Open("mysql", h.mboxDSN)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = mbox.Close() })
	loc, err = time.LoadLocation("Asia/Shanghai")
	if err != nil {
		h.t.Fatal(err)
	}
	before := time.Now().In(loc).Format(time.DateOnly)
	day = h.waitRequest(mbox, loc)
	if after := time.Now().In(loc).Format(time.DateOnly); day != before && day != after {
		h.t.Fatalf("the pump asked for %s; today in Asia/Shanghai is %s", day, after)
	}
	return mbox, loc, day
}

// waitRequest waits for the pump's full-day request in COUTMSGS and
// returns the day it asks for.
func (h *harness) waitRequest(mbox *sql.DB, loc *time.Location) string {
	h.t.Helper()
	var day string
	await.Eventually(h.t, "the pump's RQFD in COUTMSGS", waitLong, func() (bool, string) {
		rows, err := mbox.QueryContext(h.ctx(), `SELECT COUTMSGS_CLOB_MSG FROM COUTMSGS ORDER BY COUTMSGS_ID`)
		if err != nil {
			return false, err.Error()
		}
		defer func() { _ = rows.Close() }()
		var bodies []string
		for rows.Next() {
			var body string
			if err := rows.Scan(&body); err != nil {
				return false, err.Error()
			}
			bodies = append(bodies, body)
		}
		if err := rows.Err(); err != nil {
			return false, err.Error()
		}
		for _, b := range bodies {
			if !strings.Contains(b, "<TYPE>RQFD</TYPE>") {
				continue
			}
			var err error
			if day, err = proctest.RequestDay(b, loc); err != nil {
				return false, err.Error()
			}
			return true, ""
		}
		return false, fmt.Sprintf("%d outbound rows, no RQFD", len(bodies))
	})
	return day
}

// exportLines is what `flightfeed export` prints: every flight's canonical
// JSON, sorted by FLID, from one consistent read.
func (h *harness) exportLines() [][]byte {
	h.t.Helper()
	db, err := store.Open(h.ctx(), h.pgDSN, store.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	states, err := db.ReadFlights(h.ctx(), store.Filter{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out [][]byte
	for _, s := range states {
		doc, err := flight.CanonicalJSON(s)
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, doc)
	}
	return out
}

// TestRealPumpMirrorsTheLedger is TestFeedRunsAndMirrorsTheLedger with the
// real pump and dispatcher (the factory `flightfeed manager` runs): the example
// FlightFeed of docs/first-feed.md and its Secrets are applied against a fresh PostgreSQL, a
// fresh MariaDB mailbox and a kfake broker; the elected pump asks the
// mailbox for today's schedule; the AODB's answer (a RESP of that day,
// inserted into CMINMSGS) becomes the day's snapshot; the status, the
// FlightFeedDay, `kubectl get` and the KAFKA_SCHD topic all follow.
func TestRealPumpMirrorsTheLedger(t *testing.T) {
	h := newHarness(t)
	rep := h.startReplicaWith("replica-a", pumppod.StartFeed)
	h.secrets("pek")
	key := h.feedToday("pek")

	mbox, loc, day := h.pumpRequest()

	// The AODB answers: a RESP whose records are all of the requested day.
	const flights = 3
	resp := simulate.Response(simulate.Options{Day: day, Flights: flights, Seed: 1, FirstSeqn: 1, Location: loc})
	respID := mailboxtest.Write(t, mbox, mailbox.Inbound{Received: time.Now(), Body: resp.Body})

	var ledger store.LedgerDay
	await.Eventually(t, "the RESP to become the day's snapshot in the ledger", waitLong, func() (bool, string) {
		ledger = h.ledger()[day]
		return ledger.Version == 1 && ledger.Flights == flights && ledger.LastMessageID == respID, fmt.Sprintf("%+v", ledger)
	})
	var result sql.NullString
	await.Eventually(t, "the RESP's result written back to the mailbox", waitLong, func() (bool, string) {
		err := mbox.QueryRowContext(h.ctx(), `SELECT CMINMSGS_PROC_RESULT FROM CMINMSGS WHERE CMINMSGS_ID = ? AND CMINMSGS_DATE_PROCESSED IS NOT NULL`, respID).Scan(&result)
		return err == nil && result.String == "SUCCEEDED", fmt.Sprint(result, err)
	})

	// The FlightFeedDay mirrors the ledger row, owned by its FlightFeed.
	dayObj := h.waitDay(key, ledger)
	ff, err := h.getFeed(key)
	if err != nil {
		t.Fatal(err)
	}
	if dayObj.Spec.Day != day || dayObj.Spec.FeedName != "pek" || !metav1.IsControlledBy(dayObj, ff) {
		t.Fatalf("day object %+v", dayObj.ObjectMeta)
	}

	// Ready, with the real pump's figures.
	ff = h.waitReady(key)
	await.Eventually(t, "the status to carry the pump's figures and the day", waitLong, func() (bool, string) {
		ff, err = h.getFeed(key)
		if err != nil {
			return false, err.Error()
		}
		s := ff.Status
		p := s.Pump
		ok := p != nil && p.Holder == "replica-a" && p.Epoch > 0 && p.Since != nil && p.LastProcessedID == respID &&
			p.QueueDepth == 0 && p.Lag != nil && p.Counts != nil && p.Counts.Succeeded == 1 &&
			s.LatestSnapshot != nil && s.LatestSnapshot.Day == day && s.LatestSnapshot.Version == 1 &&
			slices.ContainsFunc(s.OperationDays, func(d v1alpha1.OperationDayStatus) bool {
				return d.Day == day && d.Version == 1 && d.Flights == flights && d.LastMessageID == respID
			}) && s.Outbox != nil && s.Outbox.Pending == 0
		return ok, fmt.Sprintf("pump %+v days %+v latest %+v outbox %+v", p, s.OperationDays, s.LatestSnapshot, s.Outbox)
	})
	for _, ct := range []v1alpha1.ConditionType{v1alpha1.ConditionReady, v1alpha1.ConditionPumpRunning, v1alpha1.ConditionMailboxReachable,
		v1alpha1.ConditionDatabaseReachable, v1alpha1.ConditionKafkaReachable} {
		if c := meta.FindStatusCondition(ff.Status.Conditions, string(ct)); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != ff.Generation {
			t.Fatalf("%s: %+v", ct, c)
		}
	}

	// The Lease holder is the pipeline_lock holder, at the status's epoch.
	lease, err := h.lease(key)
	if err != nil || ptr.Deref(lease.Spec.HolderIdentity, "") != "replica-a" {
		t.Fatalf("lease %+v: %v", lease, err)
	}
	lockHolder, lockEpoch := h.pipelineLock()
	if lockHolder != "replica-a" || lockEpoch != ff.Status.Pump.Epoch {
		t.Fatalf("pipeline_lock held by %q at epoch %d; status says %s at %d", lockHolder, lockEpoch, ff.Status.Pump.Holder, ff.Status.Pump.Epoch)
	}

	// kubectl get flightfeeds / flightfeeddays.
	checkTable(t, h.ns, "flightfeeds", "pek", map[string]string{
		"Ready": "True", "Leader": "replica-a", "Lag": "0s", "Latest-Day": day, "Version": "1", "Reason": "Running",
	}, []string{"Name", "Ready", "Leader", "Lag", "Latest-Day", "Version", "Pods", "Age", "Reason", "Message"}, []string{"Reason", "Message"})
	checkTable(t, h.ns, "flightfeeddays", pumppod.DayName("pek", day), map[string]string{
		"Day": day, "Version": "1", "Flights": fmt.Sprint(flights), "Last-Message": fmt.Sprint(respID), "Feed": "pek",
	}, []string{"Name", "Day", "Version", "Flights", "Last-Message", "Committed", "Age", "Feed", "Verified", "Verified-At"}, []string{"Feed", "Verified", "Verified-At"})

	// The real pump reports to the feed's metrics.
	wantMetric(t, rep, "flightfeed_pump_running", map[string]string{"feed": "pek"}, 1)
	wantMetric(t, rep, "flightfeed_messages_total", map[string]string{"feed": "pek", "type": "SCHD", "styp": "RESP", "result": "SUCCEEDED"}, 1)
	wantMetric(t, rep, "flightfeed_snapshot_version", map[string]string{"feed": "pek", "day": day}, 1)
	// The three connections' statistics, labelled with the feed: the
	// PostgreSQL pool, the mailbox's database/sql pool, the Kafka client.
	feedLabels := map[string]string{"feed_namespace": h.ns, "feed": "pek"}
	wantMetric(t, rep, "flightfeed_database_pool_max_conns", feedLabels, 4)
	wantMetricFunc(t, rep, "flightfeed_database_pool_acquires_total", feedLabels, "> 0", func(v float64) bool { return v > 0 })
	wantMetricFunc(t, rep, "go_sql_open_connections", map[string]string{"feed_namespace": h.ns, "feed": "pek", "db_name": "mailbox"}, "> 0", func(v float64) bool { return v > 0 })
	wantMetricFunc(t, rep, "flightfeed_kafka_produce_records_total", feedLabels, ">= 3", func(v float64) bool { return v >= flights })
	wantMetric(t, rep, "flightfeed_build_info", map[string]string{}, 1)

	// KAFKA_SCHD converges to the export: the dispatcher delivered every
	// flight's latest document.
	export := h.exportLines()
	if len(export) != flights {
		t.Fatalf("export has %d flights, want %d", len(export), flights)
	}
	await.Eventually(t, "KAFKA_SCHD to converge to the export", waitLong, func() (bool, string) {
		return converged(t, h.brokers, "KAFKA_SCHD", export)
	})
	dispatchtest.AssertConverged(t, h.brokers, "KAFKA_SCHD", export)
}

// pipelineLock reads the writer lock of the feed database.
func (h *harness) pipelineLock() (holder string, epoch int64) {
	h.t.Helper()
	conn, err := pgx.Connect(h.ctx(), h.pgDSN)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(h.ctx())) }()
	var hold *string
	if err := conn.QueryRow(h.ctx(), `SELECT holder, epoch FROM pipeline_lock WHERE name = $1`, store.LockName).Scan(&hold, &epoch); err != nil {
		h.t.Fatal(err)
	}
	return ptr.Deref(hold, ""), epoch
}

// converged reports whether the latest document per key on topic equals
// the export (tombstones deleting), and a description otherwise.
func converged(t *testing.T, brokers []string, topic string, export [][]byte) (bool, string) {
	t.Helper()
	want := map[string]string{}
	for _, line := range export {
		var doc struct {
			FLID string `json:"FLID"`
		}
		if err := json.Unmarshal(line, &doc); err != nil {
			t.Fatal(err)
		}
		want[doc.FLID] = string(line)
	}
	got := dispatchtest.Converge(t, brokers, topic)
	var differ []string
	for k, v := range want {
		if string(got[k]) != v {
			differ = append(differ, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			differ = append(differ, k)
		}
	}
	slices.Sort(differ)
	return len(differ) == 0, fmt.Sprintf("FLIDs not converged: %v", differ)
}
