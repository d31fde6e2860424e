package pumppod

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/store"
)

var t0 = time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC)

func healthyPump() feedrun.Status {
	return feedrun.Status{Status: pump.Status{Running: true, Holder: "a", Epoch: 7, Since: t0, LastProcessedID: 99, QueueDepth: 3,
		Lag: 1500 * time.Millisecond, Counts: map[string]int64{"SUCCEEDED": 10, "DEAD": 1}, MessagesPerSecond: 12.345,
		MailboxReachable: true, DatabaseReachable: true},
		KafkaReachable: true, OutboxPending: 4, OutboxOldestAge: 2500 * time.Millisecond}
}

func runningInput(mod func(*reportInput)) reportInput {
	in := reportInput{Now: t0, Generation: 3, Identity: "a", Leading: true, Phase: phaseRunning, CurrentConfig: true,
		Epoch: 7, Since: t0, Pump: healthyPump(), PlaintextKnown: true}
	if mod != nil {
		mod(&in)
	}
	return in
}

type wantCond struct {
	status metav1.ConditionStatus
	reason v1alpha1.ConditionReason
	msg    string // substring
}

func TestBuildStatusConditions(t *testing.T) {
	notRunning := func(r v1alpha1.ConditionReason, msg string) map[v1alpha1.ConditionType]wantCond {
		return map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady:             {metav1.ConditionFalse, r, msg},
			v1alpha1.ConditionPumpRunning:       {metav1.ConditionFalse, r, msg},
			v1alpha1.ConditionMailboxReachable:  {metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, ""},
			v1alpha1.ConditionDatabaseReachable: {metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, ""},
			v1alpha1.ConditionKafkaReachable:    {metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, ""},
			v1alpha1.ConditionDegraded:          {metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, ""},
			v1alpha1.ConditionKafkaDegraded:     {metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, ""},
		}
	}
	for _, tc := range []struct {
		name string
		in   reportInput
		want map[v1alpha1.ConditionType]wantCond
	}{
		{"running and reachable", runningInput(nil), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady:             {metav1.ConditionTrue, v1alpha1.ReasonRunning, "a runs the pump"},
			v1alpha1.ConditionPumpRunning:       {metav1.ConditionTrue, v1alpha1.ReasonRunning, "epoch 7"},
			v1alpha1.ConditionMailboxReachable:  {metav1.ConditionTrue, v1alpha1.ReasonReachable, ""},
			v1alpha1.ConditionDatabaseReachable: {metav1.ConditionTrue, v1alpha1.ReasonReachable, ""},
			v1alpha1.ConditionKafkaReachable:    {metav1.ConditionTrue, v1alpha1.ReasonReachable, ""},
			v1alpha1.ConditionDegraded:          {metav1.ConditionFalse, v1alpha1.ReasonAsExpected, ""},
			v1alpha1.ConditionKafkaDegraded:     {metav1.ConditionFalse, v1alpha1.ReasonAsExpected, ""},
		}},
		{"events parked", runningInput(func(in *reportInput) {
			in.Pump.OutboxParked, in.Pump.OutboxParkedTotal = 2, 2
			in.Pump.LastParked = &dispatch.Parked{EventID: 9, Kind: store.KindState, FLID: 1234, StateVersion: 77, MessageID: 5,
				Reason: dispatch.ReasonRecordTooLarge, Error: "MESSAGE_TOO_LARGE: too big"}
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady: {metav1.ConditionTrue, v1alpha1.ReasonRunning, ""},
			v1alpha1.ConditionKafkaDegraded: {metav1.ConditionTrue, v1alpha1.ReasonEventsParked,
				"2 outbox event(s) are parked: the brokers refused their records for good; latest: the state of flight 1234 at version 77 (mailbox row 5), RecordTooLarge: MESSAGE_TOO_LARGE"},
		}},
		{"Kafka down", runningInput(func(in *reportInput) { in.Pump.KafkaReachable, in.Pump.KafkaError = false, "dial tcp: refused" }),
			map[v1alpha1.ConditionType]wantCond{
				v1alpha1.ConditionReady:          {metav1.ConditionFalse, v1alpha1.ReasonServiceUnreachable, "Kafka unreachable"},
				v1alpha1.ConditionPumpRunning:    {metav1.ConditionTrue, v1alpha1.ReasonRunning, ""},
				v1alpha1.ConditionKafkaReachable: {metav1.ConditionFalse, v1alpha1.ReasonUnreachable, "dial tcp: refused"},
			}},
		{"Kafka transactions off", runningInput(func(in *reportInput) { in.Pump.KafkaTransactionsOff = true }),
			map[v1alpha1.ConditionType]wantCond{
				v1alpha1.ConditionReady:          {metav1.ConditionTrue, v1alpha1.ReasonRunning, ""},
				v1alpha1.ConditionKafkaReachable: {metav1.ConditionTrue, v1alpha1.ReasonTransactionsOff, "older versions"},
			}},
		{"Kafka transactions off and Kafka down", runningInput(func(in *reportInput) {
			in.Pump.KafkaTransactionsOff, in.Pump.KafkaReachable, in.Pump.KafkaError = true, false, "dial tcp: refused"
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionKafkaReachable: {metav1.ConditionFalse, v1alpha1.ReasonUnreachable, "dial tcp: refused"},
		}},
		{"Kafka producer fenced", runningInput(func(in *reportInput) {
			in.Phase, in.LastErr = phaseFenced, fmt.Errorf("kafka dispatcher stopped: %w", fmt.Errorf("%w: PRODUCER_FENCED", dispatch.ErrFenced))
		}), notRunning(v1alpha1.ReasonFenced, "PRODUCER_FENCED")},
		{"head blocked", runningInput(func(in *reportInput) {
			in.Pump.HeadID, in.Pump.HeadBlockedSince, in.Pump.HeadLastError = 42, t0.Add(-time.Minute), "deadlock detected"
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady:    {metav1.ConditionTrue, v1alpha1.ReasonRunning, ""},
			v1alpha1.ConditionDegraded: {metav1.ConditionTrue, v1alpha1.ReasonHeadBlocked, "mailbox row 42 has been failing since 2026-09-09T07:59:00Z: deadlock detected"},
		}},
		{"configuration changed, restart pending", runningInput(func(in *reportInput) { in.CurrentConfig = false }),
			map[v1alpha1.ConditionType]wantCond{v1alpha1.ConditionReady: {metav1.ConditionFalse, v1alpha1.ReasonStarting, "changed configuration"}}},
		{"runner built, loop not running yet", runningInput(func(in *reportInput) { in.Pump.Running = false }),
			notRunning(v1alpha1.ReasonStarting, "a is starting the pump")},
		{"starting", runningInput(func(in *reportInput) { in.Phase, in.Pump = phaseStarting, feedrun.Status{} }),
			notRunning(v1alpha1.ReasonStarting, "")},
		{"secret missing", runningInput(func(in *reportInput) {
			in.ConfigErr = &ConfigError{Reason: v1alpha1.ReasonSecretUnavailable, Err: errors.New("spec.database.dsnSecretRef.name: secret ns/db not found")}
			in.Phase = phaseWaiting
		}), notRunning(v1alpha1.ReasonSecretUnavailable, "spec.database.dsnSecretRef.name")},
		{"invalid spec", runningInput(func(in *reportInput) {
			in.ConfigErr = &ConfigError{Reason: v1alpha1.ReasonInvalidSpec, Err: errors.New("spec.airport.timeZone: Invalid value")}
		}), notRunning(v1alpha1.ReasonInvalidSpec, "spec.airport.timeZone")},
		{"pump failed", runningInput(func(in *reportInput) { in.Phase, in.LastErr = phaseFailed, errors.New("boom") }),
			notRunning(v1alpha1.ReasonPumpFailed, "boom")},
		{"fenced", runningInput(func(in *reportInput) { in.Phase, in.LastErr = phaseFenced, fmt.Errorf("x: %w", store.ErrFenced) }),
			notRunning(v1alpha1.ReasonFenced, "superseded")},
		{"database unreachable at start", runningInput(func(in *reportInput) {
			in.Phase, in.LastErr, in.DatabaseErr = phaseFailed, errors.New("connect: refused"), true
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady:             {metav1.ConditionFalse, v1alpha1.ReasonPumpFailed, "connect: refused"},
			v1alpha1.ConditionDatabaseReachable: {metav1.ConditionFalse, v1alpha1.ReasonUnreachable, "connect: refused"},
		}},
		{"mailbox unreachable at start", runningInput(func(in *reportInput) {
			in.Phase, in.LastErr, in.MailboxErr = phaseFailed, errors.New("mailbox: server sent a packet of more than 42991616 bytes"), true
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady:             {metav1.ConditionFalse, v1alpha1.ReasonPumpFailed, "more than 42991616 bytes"},
			v1alpha1.ConditionMailboxReachable:  {metav1.ConditionFalse, v1alpha1.ReasonUnreachable, "more than 42991616 bytes"},
			v1alpha1.ConditionDatabaseReachable: {metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, "no pump runs"},
		}},
		{"plain text to loopback only", runningInput(func(in *reportInput) {
			in.Plaintext = []config.Plaintext{config.MailboxPlaintext("root@tcp(127.0.0.1:3306)/mbx", nil),
				config.DatabasePlaintext("database", "postgres://u@db.ops/ff?sslmode=verify-full", nil)}
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady:               {metav1.ConditionTrue, v1alpha1.ReasonRunning, ""},
			v1alpha1.ConditionPlaintextDependency: {metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "over TLS or on loopback"},
		}},
		{"plain text opted in", runningInput(func(in *reportInput) {
			in.Plaintext = []config.Plaintext{config.MailboxPlaintext("u:p@tcp(mysql.ops:3306)/mbx", &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable}),
				config.DatabasePlaintext("database", "postgres://u:p@db.ops/ff?sslmode=disable", &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable})}
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady: {metav1.ConditionTrue, v1alpha1.ReasonRunning, ""},
			v1alpha1.ConditionPlaintextDependency: {metav1.ConditionTrue, v1alpha1.ReasonPlaintextOptedIn,
				"plain text (tls mode: disable) to mailbox mysql.ops:3306; database db.ops:5432: passwords and flight data cross the network unencrypted"},
		}},
		{"plain text refused", runningInput(func(in *reportInput) {
			in.ConfigErr = &ConfigError{Reason: v1alpha1.ReasonPlaintextRefused, Err: errors.New("spec.mailbox.dsnSecretRef: plain text to mysql.ops:3306 is refused")}
			in.Phase, in.PlaintextKnown = phaseWaiting, false
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady:               {metav1.ConditionFalse, v1alpha1.ReasonPlaintextRefused, "mysql.ops:3306 is refused"},
			v1alpha1.ConditionPumpRunning:         {metav1.ConditionFalse, v1alpha1.ReasonPlaintextRefused, "mysql.ops:3306 is refused"},
			v1alpha1.ConditionPlaintextDependency: {metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, "does not resolve"},
		}},
		{"verified TLS, default require_auth", runningInput(func(in *reportInput) {
			in.Unverified = []config.Unverified{config.MailboxUnverified("u:p@tcp(mysql.ops:3306)/mbx?tls=true", nil),
				config.DatabaseUnverified("database", "postgres://u@db.ops/ff?sslmode=verify-full", nil),
				config.DatabaseUnverified("database", "postgres://u@127.0.0.1/ff?sslmode=require", nil)}
			in.WeakAuth = []config.WeakAuth{config.DatabaseWeakAuth("database", "postgres://u@db.ops/ff?sslmode=verify-full")}
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady:                   {metav1.ConditionTrue, v1alpha1.ReasonRunning, ""},
			v1alpha1.ConditionUnverifiedTLSDependency: {metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "verifies the server's certificate"},
			v1alpha1.ConditionWeakDatabaseAuth:        {metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "no cleartext or MD5"},
		}},
		{"unverified TLS opted in", runningInput(func(in *reportInput) {
			in.Unverified = []config.Unverified{
				config.MailboxUnverified("u:p@tcp(mysql.ops:3306)/mbx?tls=skip-verify", &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified}),
				config.DatabaseUnverified("database", "postgres://u:p@db.ops/ff?sslmode=require", &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified})}
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady:               {metav1.ConditionTrue, v1alpha1.ReasonRunning, ""},
			v1alpha1.ConditionPlaintextDependency: {metav1.ConditionFalse, v1alpha1.ReasonAsExpected, ""},
			v1alpha1.ConditionUnverifiedTLSDependency: {metav1.ConditionTrue, v1alpha1.ReasonUnverifiedTLSOptedIn,
				"to mailbox mysql.ops:3306 (tls=skip-verify); database db.ops:5432 (sslmode=require): whoever answers"},
		}},
		{"require_auth permits md5", runningInput(func(in *reportInput) {
			in.WeakAuth = []config.WeakAuth{config.DatabaseWeakAuth("database", "postgres://u:p@db.ops/ff?sslmode=verify-full&require_auth=scram-sha-256,md5"),
				config.DatabaseWeakAuth("read database", "postgres://r:p@db.ops/ff?sslmode=verify-full")}
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady: {metav1.ConditionTrue, v1alpha1.ReasonRunning, ""},
			v1alpha1.ConditionWeakDatabaseAuth: {metav1.ConditionTrue, v1alpha1.ReasonPasswordAuthAllowed,
				"database require_auth=scram-sha-256,md5 permits md5: "},
		}},
		{"unverified TLS refused", runningInput(func(in *reportInput) {
			in.ConfigErr = &ConfigError{Reason: v1alpha1.ReasonUnverifiedTLSRefused, Err: errors.New("spec.database.dsnSecretRef: unverified TLS (sslmode=require) to db.ops:5432 is refused")}
			in.Phase, in.PlaintextKnown = phaseWaiting, false
		}), map[v1alpha1.ConditionType]wantCond{
			v1alpha1.ConditionReady:                   {metav1.ConditionFalse, v1alpha1.ReasonUnverifiedTLSRefused, "db.ops:5432 is refused"},
			v1alpha1.ConditionPumpRunning:             {metav1.ConditionFalse, v1alpha1.ReasonUnverifiedTLSRefused, "db.ops:5432 is refused"},
			v1alpha1.ConditionUnverifiedTLSDependency: {metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, "does not resolve"},
			v1alpha1.ConditionWeakDatabaseAuth:        {metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, "does not resolve"},
		}},
		{"stepping down", reportInput{Now: t0, Generation: 3, Identity: "a"}, notRunning(v1alpha1.ReasonNoLeader, "a stepped down")},
		{"deleted", reportInput{Now: t0, Generation: 3, Identity: "a", Terminating: true}, notRunning(v1alpha1.ReasonTerminating, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := buildStatus(tc.in)
			if len(got.Conditions) != 10 {
				t.Fatalf("%d conditions: %+v", len(got.Conditions), got.Conditions)
			}
			for ct, w := range tc.want {
				c := meta.FindStatusCondition(got.Conditions, string(ct))
				if c == nil || c.Status != w.status || c.Reason != string(w.reason) || !strings.Contains(c.Message, w.msg) {
					t.Errorf("%s: got %+v, want %+v", ct, c, w)
				}
			}
			for _, c := range got.Conditions {
				if c.ObservedGeneration != 3 || c.Message == "" {
					t.Errorf("%s: observedGeneration %d, message %q", c.Type, c.ObservedGeneration, c.Message)
				}
			}
		})
	}
}

func TestBuildStatusFigures(t *testing.T) {
	got := buildStatus(runningInput(nil))
	p := got.Pump
	if p == nil || p.Holder != "a" || p.Epoch != 7 || p.LastProcessedID != 99 || p.QueueDepth != 3 ||
		p.Lag.Duration != time.Second || p.MessagesPerSecond != "12.3" || p.Counts.Succeeded != 10 || p.Counts.Dead != 1 {
		t.Fatalf("pump %+v", p)
	}
	if got.Outbox.Pending != 4 || got.Outbox.OldestAge.Duration != 2*time.Second || got.Backfill == nil {
		t.Fatalf("outbox %+v backfill %+v", got.Outbox, got.Backfill)
	}
	// Not running: who leads is known, the figures are not.
	got = buildStatus(runningInput(func(in *reportInput) { in.Phase = phaseStarting }))
	if got.Pump == nil || got.Pump.Holder != "a" || got.Pump.Lag != nil || got.Pump.Counts != nil || got.Outbox != nil {
		t.Fatalf("starting: pump %+v outbox %+v", got.Pump, got.Outbox)
	}
	// Stepping down: no holder.
	if got := buildStatus(reportInput{Generation: 1, Identity: "a"}); got.Pump != nil {
		t.Fatalf("stepping down: pump %+v", got.Pump)
	}
}

func TestLedgerStatusIsBounded(t *testing.T) {
	var ledger []store.LedgerDay
	start := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	for i := range 40 {
		d := start.AddDate(0, 0, i)
		ledger = append(ledger, store.LedgerDay{Day: d.Format(time.DateOnly), Version: int64(i + 1), LastMessageID: int64(100 + i),
			Flights: 10, LastCommitAt: start.Add(time.Duration(40-i) * time.Hour)})
	}
	got := buildStatus(runningInput(func(in *reportInput) { in.Ledger, in.LedgerKnown = ledger, true }))
	if len(got.OperationDays) != v1alpha1.MaxStatusDays || got.OperationDays[0].Day != "2026-08-10" || got.OperationDays[30].Day != "2026-09-09" {
		t.Fatalf("%d days, from %s to %s", len(got.OperationDays), got.OperationDays[0].Day, got.OperationDays[len(got.OperationDays)-1].Day)
	}
	// Latest = most recently committed, even if it is an older day.
	if got.LatestSnapshot == nil || got.LatestSnapshot.Day != "2026-08-01" || got.LatestSnapshot.Version != 1 {
		t.Fatalf("latest %+v", got.LatestSnapshot)
	}
	// An unreadable ledger leaves the listed days alone.
	st := v1alpha1.FlightFeedStatus{OperationDays: got.OperationDays, LatestSnapshot: got.LatestSnapshot}
	applyReport(&st, buildStatus(runningInput(nil)), t0)
	if len(st.OperationDays) != v1alpha1.MaxStatusDays || st.LatestSnapshot == nil {
		t.Fatal("an unknown ledger cleared the days")
	}
}

// A ledger day past retention that is kept says why in the status; a day
// inside retention says nothing, held or not.
func TestLedgerStatusSaysWhyADayIsHeld(t *testing.T) {
	held := "MESSAGE_UNFINISHED: message 201 is FAILED (INFRA)"
	ledger := []store.LedgerDay{
		{Day: "2026-09-01", Version: 1, Held: held},
		{Day: "2026-09-02", Version: 1},
		{Day: "2026-09-08", Version: 1, Held: "FLIGHTS_CURRENT: flights of the day are still in current state (not yet moved to history)"},
	}
	for _, tc := range []struct {
		cutoff string
		want   []string
	}{
		{"2026-09-08", []string{held, "", ""}},
		{"2026-09-09", []string{held, "", "FLIGHTS_CURRENT: flights of the day are still in current state (not yet moved to history)"}},
		{"", []string{"", "", ""}},
	} {
		got := buildStatus(runningInput(func(in *reportInput) {
			in.Ledger, in.LedgerKnown, in.LedgerCutoff = ledger, true, tc.cutoff
		}))
		var heldBy []string
		for _, d := range got.OperationDays {
			heldBy = append(heldBy, d.Held)
		}
		if !slices.Equal(heldBy, tc.want) {
			t.Errorf("cutoff %q: held %q, want %q", tc.cutoff, heldBy, tc.want)
		}
	}
	feed := &config.Feed{Location: time.FixedZone("CST", 8*3600)}
	days := int32(7)
	feed.Spec.Retention.LedgerDays = &days
	if got := ledgerCutoff(time.Date(2026, 9, 9, 17, 0, 0, 0, time.UTC), feed); got != "2026-09-03" {
		t.Errorf("ledgerCutoff at 2026-09-10 01:00 airport time, 7 days = %s, want 2026-09-03", got)
	}
	days = 0
	if got := ledgerCutoff(time.Date(2026, 9, 9, 17, 0, 0, 0, time.UTC), feed); got != "" {
		t.Errorf("ledgerCutoff with retention off = %q", got)
	}
}

// TestApplyReportIsStable: applying the same report twice changes nothing
// (so the writer skips the second write), and a condition keeps its
// transition time while its status stays.
func TestApplyReportIsStable(t *testing.T) {
	in := runningInput(func(in *reportInput) {
		in.Ledger = []store.LedgerDay{{Day: "2026-09-09", Version: 2, LastMessageID: 5, Flights: 3, LastCommitAt: t0.Add(123 * time.Millisecond)}}
		in.LedgerKnown = true
		in.Pump.Since = t0.Add(456 * time.Millisecond)
	})
	var st v1alpha1.FlightFeedStatus
	applyReport(&st, buildStatus(in), t0.Add(789*time.Millisecond))
	before := st.DeepCopy()
	later := in
	later.Now = t0.Add(time.Minute)
	applyReport(&st, buildStatus(later), later.Now)
	if !equality.Semantic.DeepEqual(*before, st) {
		t.Fatalf("the same report changed the status:\n%+v\n%+v", before, st)
	}
	ready := meta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionReady))
	if !ready.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("transition time %s", ready.LastTransitionTime)
	}
	if st.Pump.Since.Nanosecond() != 0 || st.OperationDays[0].LastCommitAt.Nanosecond() != 0 {
		t.Fatal("times are not truncated to what the API keeps")
	}
	// A change of status moves the transition time.
	down := later
	down.Pump.KafkaReachable = false
	applyReport(&st, buildStatus(down), later.Now)
	ready = meta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionReady))
	if ready.Status != metav1.ConditionFalse || !ready.LastTransitionTime.Time.Equal(later.Now) {
		t.Fatalf("Ready %+v", ready)
	}
}

func TestTruncateKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é", 10) // 20 bytes
	got := truncate(s, 5)
	if got != "éé" {
		t.Fatalf("%q", got)
	}
}
