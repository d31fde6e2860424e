package pumppod

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
)

// runPhase is where the leader's runner is.
type runPhase string

const (
	// phaseWaiting: no runnable configuration (invalid spec, missing Secret).
	phaseWaiting runPhase = "Waiting"
	// phaseStarting: opening the database, taking the epoch, building the runner.
	phaseStarting runPhase = "Starting"
	// phaseRunning: the runner's Run is executing.
	phaseRunning runPhase = "Running"
	// phaseFailed: the runner stopped or could not start; restarted with backoff.
	phaseFailed runPhase = "Failed"
	// phaseFenced: another pump took a newer epoch.
	phaseFenced runPhase = "Fenced"
	// phaseSchemaRefused: the database's schema is not the binary's (too
	// new, or too old without autoMigrate); checked again with backoff.
	phaseSchemaRefused runPhase = "SchemaRefused"
)

// reportInput is everything one status report is computed from.
type reportInput struct {
	Now        time.Time
	Generation int64
	Identity   string
	// Leading is false for the last report of a holder stepping down.
	Leading bool
	// Terminating: the FlightFeed is being deleted.
	Terminating bool
	// ConfigErr is set when the feed cannot run as it stands.
	ConfigErr error
	Phase     runPhase
	// CurrentConfig: the runner runs the configuration last resolved.
	CurrentConfig bool
	// LastErr is why the runner failed; DatabaseErr is set when the failure
	// was reaching the database (opening, migrating, taking the epoch).
	LastErr     error
	DatabaseErr bool
	// MailboxErr is set when the failure was connecting to the mailbox.
	MailboxErr bool
	// SchemaVersion is the database's schema version found on opening it
	// (0: not known).
	SchemaVersion int64
	Epoch         int64
	Since         time.Time
	// Pump is the runner's report (meaningful in phaseRunning).
	Pump feedrun.Status
	// Ledger is the snapshot ledger; LedgerKnown is false when it could not
	// be read (the listed days are then left as they are).
	Ledger      []store.LedgerDay
	LedgerKnown bool
	// LedgerCutoff is the first day ledger retention keeps
	// ("YYYY-MM-DD"; "" when it keeps every day): an older day still in the
	// ledger is held, and its status says why.
	LedgerCutoff string
	// ReadAccess is how the read API reaches the database of the resolved
	// feed; "" while the feed does not resolve (left as it is).
	ReadAccess v1alpha1.ReadAPIDatabaseAccess
	// Plaintext is what the resolved feed's DSNs send in plain text
	// (config.PlaintextOf), Unverified what they reach over unverified TLS
	// (config.UnverifiedOf), WeakAuth the weak password requests they
	// answer (config.WeakAuthOf); PlaintextKnown is false while the feed
	// does not resolve (then none of the three is known).
	Plaintext      []config.Plaintext
	Unverified     []config.Unverified
	WeakAuth       []config.WeakAuth
	PlaintextKnown bool
}

// statusReport is the status a report writes, conditions without their
// transition times (SetStatusCondition keeps those).
type statusReport struct {
	Generation     int64
	Conditions     []metav1.Condition
	Pump           *v1alpha1.PumpStatus
	Outbox         *v1alpha1.OutboxStatus
	Backfill       *v1alpha1.BackfillStatus
	DaysKnown      bool
	SchemaVersion  int64
	LatestSnapshot *v1alpha1.LatestSnapshot
	OperationDays  []v1alpha1.OperationDayStatus
	ReadAPI        *v1alpha1.ReadAPIStatus
}

// maxConditionMessage bounds condition messages well inside the API's 32 KiB.
const maxConditionMessage = 1024

// buildStatus decides the status of a feed from one report's inputs. It
// does no I/O; the table tests in status_test.go drive it.
func buildStatus(in reportInput) statusReport {
	out := statusReport{Generation: in.Generation, DaysKnown: in.LedgerKnown, SchemaVersion: in.SchemaVersion}
	cond := func(t v1alpha1.ConditionType, s metav1.ConditionStatus, r v1alpha1.ConditionReason, msg string) {
		out.Conditions = append(out.Conditions, metav1.Condition{Type: string(t), Status: s, Reason: string(r),
			Message: truncate(msg, maxConditionMessage), ObservedGeneration: in.Generation})
	}
	notRunning := func(reason v1alpha1.ConditionReason, msg string) {
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
		cond(v1alpha1.ConditionPumpRunning, metav1.ConditionFalse, reason, msg)
		dbStatus, dbReason, dbMsg := metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, "no pump runs"
		switch {
		case in.DatabaseErr && in.LastErr != nil:
			dbStatus, dbReason, dbMsg = metav1.ConditionFalse, v1alpha1.ReasonUnreachable, in.LastErr.Error()
		case in.Phase == phaseSchemaRefused && in.Leading:
			dbStatus, dbReason, dbMsg = metav1.ConditionTrue, v1alpha1.ReasonReachable,
				fmt.Sprintf("database answers; its schema is at version %d", in.SchemaVersion)
		}
		mbStatus, mbReason, mbMsg := metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, "no pump runs"
		if in.MailboxErr && in.LastErr != nil {
			mbStatus, mbReason, mbMsg = metav1.ConditionFalse, v1alpha1.ReasonUnreachable, in.LastErr.Error()
		}
		cond(v1alpha1.ConditionMailboxReachable, mbStatus, mbReason, mbMsg)
		cond(v1alpha1.ConditionDatabaseReachable, dbStatus, dbReason, dbMsg)
		cond(v1alpha1.ConditionKafkaReachable, metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, "no pump runs")
		cond(v1alpha1.ConditionDegraded, metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, "no pump runs")
		cond(v1alpha1.ConditionKafkaDegraded, metav1.ConditionUnknown, v1alpha1.ReasonNotRunning, "no pump runs")
	}
	if in.Leading {
		out.Pump = &v1alpha1.PumpStatus{Holder: in.Identity, Epoch: in.Epoch, Since: timePtr(in.Since)}
	}

	switch {
	case !in.Leading && in.Terminating:
		notRunning(v1alpha1.ReasonTerminating, "the FlightFeed is being deleted; its pump is stopped")
	case !in.Leading:
		notRunning(v1alpha1.ReasonNoLeader, fmt.Sprintf("%s stepped down; the next holder of the Lease reports", in.Identity))
	case in.ConfigErr != nil:
		reason := configReason(in.ConfigErr)
		if reason == "" {
			reason = v1alpha1.ReasonInvalidSpec
		}
		notRunning(reason, in.ConfigErr.Error())
	case in.Phase == phaseFenced:
		notRunning(v1alpha1.ReasonFenced, errText(in.LastErr, "another pump took a newer fencing epoch"))
	case in.Phase == phaseSchemaRefused:
		reason := v1alpha1.ReasonSchemaTooOld
		if errors.Is(in.LastErr, store.ErrSchemaTooNew) {
			reason = v1alpha1.ReasonSchemaTooNew
		}
		notRunning(reason, errText(in.LastErr, "the database schema is not this release's"))
	case in.Phase == phaseFailed:
		notRunning(v1alpha1.ReasonPumpFailed, errText(in.LastErr, "the pump stopped"))
	case in.Phase != phaseRunning || !in.Pump.Running:
		notRunning(v1alpha1.ReasonStarting, fmt.Sprintf("%s is starting the pump", in.Identity))
	default:
		running(in, cond)
		out.Pump = pumpFigures(in)
		out.Outbox = &v1alpha1.OutboxStatus{Pending: in.Pump.OutboxPending,
			OldestAge: metav1.Duration{Duration: in.Pump.OutboxOldestAge.Truncate(time.Second)}, Parked: in.Pump.OutboxParked}
		out.Backfill = &v1alpha1.BackfillStatus{Pending: in.Pump.BackfillPending}
	}
	switch warning := config.PlaintextWarning(in.Plaintext); {
	case !in.PlaintextKnown:
		cond(v1alpha1.ConditionPlaintextDependency, metav1.ConditionUnknown, v1alpha1.ReasonNotRunning,
			"the feed's configuration does not resolve")
	case warning != "":
		cond(v1alpha1.ConditionPlaintextDependency, metav1.ConditionTrue, v1alpha1.ReasonPlaintextOptedIn, warning)
	default:
		cond(v1alpha1.ConditionPlaintextDependency, metav1.ConditionFalse, v1alpha1.ReasonAsExpected,
			"the mailbox and the database are reached over TLS or on loopback")
	}
	switch warning := config.UnverifiedWarning(in.Unverified); {
	case !in.PlaintextKnown:
		cond(v1alpha1.ConditionUnverifiedTLSDependency, metav1.ConditionUnknown, v1alpha1.ReasonNotRunning,
			"the feed's configuration does not resolve")
	case warning != "":
		cond(v1alpha1.ConditionUnverifiedTLSDependency, metav1.ConditionTrue, v1alpha1.ReasonUnverifiedTLSOptedIn, warning)
	default:
		cond(v1alpha1.ConditionUnverifiedTLSDependency, metav1.ConditionFalse, v1alpha1.ReasonAsExpected,
			"every TLS connection to the mailbox and the database verifies the server's certificate (or stays on loopback)")
	}
	switch warning := config.WeakAuthWarning(in.WeakAuth); {
	case !in.PlaintextKnown:
		cond(v1alpha1.ConditionWeakDatabaseAuth, metav1.ConditionUnknown, v1alpha1.ReasonNotRunning,
			"the feed's configuration does not resolve")
	case warning != "":
		cond(v1alpha1.ConditionWeakDatabaseAuth, metav1.ConditionTrue, v1alpha1.ReasonPasswordAuthAllowed, warning)
	default:
		cond(v1alpha1.ConditionWeakDatabaseAuth, metav1.ConditionFalse, v1alpha1.ReasonAsExpected,
			"the database connections answer no cleartext or MD5 password request")
	}
	if in.LedgerKnown {
		out.OperationDays, out.LatestSnapshot = ledgerStatus(in.Ledger, in.LedgerCutoff)
	}
	if in.ReadAccess != "" {
		out.ReadAPI = &v1alpha1.ReadAPIStatus{DatabaseAccess: in.ReadAccess}
	}
	return out
}

// readAccess is how the read API reaches the feed's database.
func readAccess(feed *config.Feed) v1alpha1.ReadAPIDatabaseAccess {
	switch {
	case feed == nil:
		return ""
	case feed.Secrets.ReadDatabaseDSN != "":
		return v1alpha1.ReadAPIReadOnlyRole
	default:
		return v1alpha1.ReadAPIReadOnlySessions
	}
}

// idReuseShown is how long Degraded says MailboxIDsReused after the last
// reused id was seen.
const idReuseShown = time.Hour

// running sets the conditions of a running pump.
func running(in reportInput, cond func(v1alpha1.ConditionType, metav1.ConditionStatus, v1alpha1.ConditionReason, string)) {
	p := in.Pump
	var down []string
	reach := func(t v1alpha1.ConditionType, name string, ok bool, errMsg string) {
		if ok {
			cond(t, metav1.ConditionTrue, v1alpha1.ReasonReachable, name+" answers")
			return
		}
		down = append(down, name)
		cond(t, metav1.ConditionFalse, v1alpha1.ReasonUnreachable, orDefault(errMsg, name+" does not answer"))
	}
	reach(v1alpha1.ConditionMailboxReachable, "mailbox", p.MailboxReachable, p.MailboxError)
	reach(v1alpha1.ConditionDatabaseReachable, "database", p.DatabaseReachable, p.DatabaseError)
	if p.KafkaReachable && p.KafkaTransactionsOff {
		cond(v1alpha1.ConditionKafkaReachable, metav1.ConditionTrue, v1alpha1.ReasonTransactionsOff,
			"Kafka answers; kafka.transactions is false: the producer is not fenced at the broker, "+
				"so a paused former leader can still publish older versions of a flight after its successor")
	} else {
		reach(v1alpha1.ConditionKafkaReachable, "Kafka", p.KafkaReachable, p.KafkaError)
	}
	kafkaDegraded(p, cond)
	cond(v1alpha1.ConditionPumpRunning, metav1.ConditionTrue, v1alpha1.ReasonRunning,
		fmt.Sprintf("%s runs the pump (epoch %d)", in.Identity, in.Epoch))
	switch {
	case !in.CurrentConfig:
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonStarting, "restarting the pump with the changed configuration")
	case len(down) > 0:
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonServiceUnreachable, strings.Join(down, ", ")+" unreachable")
	default:
		cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonRunning,
			fmt.Sprintf("%s runs the pump; mailbox, database and Kafka answer", in.Identity))
	}
	if !p.HeadBlockedSince.IsZero() {
		cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonHeadBlocked,
			fmt.Sprintf("mailbox row %d has been failing since %s: %s", p.HeadID,
				p.HeadBlockedSince.UTC().Format(time.RFC3339), p.HeadLastError))
		return
	}
	if len(p.FailedRequests) > 0 {
		cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonRequestFailed, failedRequestsMessage(p.FailedRequests))
		return
	}
	if !p.IDReusedAt.IsZero() && in.Now.Sub(p.IDReusedAt) < idReuseShown {
		cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonMailboxIDsReused,
			fmt.Sprintf("%d mailbox row(s) reused the id of an already processed message (newest: row %d at %s): the mailbox's ids restarted; "+
				"each was processed as a new message and its predecessor kept in msg_id_reuse", p.IDsReused, p.IDReusedLast,
				p.IDReusedAt.UTC().Format(time.RFC3339)))
		return
	}
	cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "the mailbox head is not blocked")
}

// kafkaDegraded sets KafkaDegraded: True while outbox events are parked,
// naming the latest one this pump parked.
func kafkaDegraded(p feedrun.Status, cond func(v1alpha1.ConditionType, metav1.ConditionStatus, v1alpha1.ConditionReason, string)) {
	if p.OutboxParked == 0 {
		cond(v1alpha1.ConditionKafkaDegraded, metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "no outbox event is parked")
		return
	}
	msg := fmt.Sprintf("%d outbox event(s) are parked: the brokers refused their records for good", p.OutboxParked)
	if l := p.LastParked; l != nil {
		msg += fmt.Sprintf("; latest: %s of flight %s at version %d (mailbox row %d), %s: %s", parkedKind(l.Kind), l.FLID,
			l.StateVersion, l.MessageID, l.Reason, l.Error)
	}
	cond(v1alpha1.ConditionKafkaDegraded, metav1.ConditionTrue, v1alpha1.ReasonEventsParked,
		msg+"; list them with `flightfeed parked`, re-deliver with `flightfeed parked --redeliver` once the cause is fixed")
}

func parkedKind(kind string) string {
	if kind == store.KindNotice {
		return "the change notice"
	}
	return "the state"
}

func pumpFigures(in reportInput) *v1alpha1.PumpStatus {
	p := in.Pump
	since := in.Since
	if !p.Since.IsZero() {
		since = p.Since
	}
	out := &v1alpha1.PumpStatus{
		Holder:           in.Identity,
		Epoch:            in.Epoch,
		Since:            timePtr(since),
		LastProcessedID:  p.LastProcessedID,
		HeadID:           p.HeadID,
		HeadBlockedSince: timePtr(p.HeadBlockedSince),
		HeadLastError:    truncate(p.HeadLastError, 1024),
		QueueDepth:       p.QueueDepth,
		Lag:              &metav1.Duration{Duration: p.Lag.Truncate(time.Second)},
		Counts: &v1alpha1.ResultCounts{
			Succeeded: p.Counts[store.StatusSucceeded],
			Skipped:   p.Counts[store.StatusSkipped],
			Dead:      p.Counts[store.StatusDead],
			Failed:    p.Counts[store.StatusFailed],
		},
		MessagesPerSecond: fmt.Sprintf("%.1f", max(p.MessagesPerSecond, 0)),
	}
	if p.HeadBlockedSince.IsZero() {
		out.HeadLastError = ""
	}
	// By day, as the pump lists them.
	for _, f := range p.FailedRequests {
		out.FailedRequests = append(out.FailedRequests, v1alpha1.FailedRequestStatus{Day: f.Day, Rejection: truncate(f.Rejection, 1024),
			MessageID: f.MessageID, FailedAt: timePtr(f.FailedAt)})
	}
	if len(out.FailedRequests) > v1alpha1.MaxStatusDays {
		out.FailedRequests = out.FailedRequests[len(out.FailedRequests)-v1alpha1.MaxStatusDays:]
	}
	return out
}

// failedRequestsMessage is Degraded's message while days are held by
// their FAILED full-day request (by day, as the pump lists them): the
// days, the oldest one's refusal, and what the operator does.
func failedRequestsMessage(failed []pumpdata.FailedRequest) string {
	days := make([]string, len(failed))
	for i, f := range failed {
		days[i] = f.Day
	}
	first := failed[0]
	return truncate(fmt.Sprintf("the full-day request of %s failed, its answers refused the same way twice (%s: %s, message %d): "+
		"the day is not asked for again until `flightfeed rerequest --day D` once the cause is fixed",
		strings.Join(days, ", "), first.Day, first.Rejection, first.MessageID), 1024)
}

// ledgerStatus lists the newest MaxStatusDays days and the most recently
// committed one; a day before cutoff says what holds it.
func ledgerStatus(ledger []store.LedgerDay, cutoff string) ([]v1alpha1.OperationDayStatus, *v1alpha1.LatestSnapshot) {
	days := slices.Clone(ledger)
	slices.SortFunc(days, func(a, b store.LedgerDay) int { return strings.Compare(a.Day, b.Day) })
	var latest *store.LedgerDay
	for i := range days {
		d := &days[i]
		if latest == nil || !d.LastCommitAt.Before(latest.LastCommitAt) {
			latest = d
		}
	}
	if len(days) > v1alpha1.MaxStatusDays {
		days = days[len(days)-v1alpha1.MaxStatusDays:]
	}
	out := make([]v1alpha1.OperationDayStatus, 0, len(days))
	for _, d := range days {
		ds := v1alpha1.OperationDayStatus{Day: d.Day, Version: d.Version, LastMessageID: d.LastMessageID,
			LastCommitAt: timePtr(d.LastCommitAt), Flights: d.Flights}
		if cutoff != "" && d.Day < cutoff {
			ds.Held = truncate(d.Held, 512)
		}
		out = append(out, ds)
	}
	if latest == nil {
		return out, nil
	}
	return out, &v1alpha1.LatestSnapshot{Day: latest.Day, Version: latest.Version, CommittedAt: timePtr(latest.LastCommitAt)}
}

// applyReport writes a report into a status. Conditions keep their
// transition time while their status stays; now stamps the others.
func applyReport(st *v1alpha1.FlightFeedStatus, r statusReport, now time.Time) {
	st.ObservedGeneration = r.Generation
	if r.SchemaVersion != 0 {
		st.SchemaVersion = r.SchemaVersion
	}
	for _, c := range r.Conditions {
		c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		meta.SetStatusCondition(&st.Conditions, c)
	}
	st.Pump, st.Outbox, st.Backfill = r.Pump, r.Outbox, r.Backfill
	if r.ReadAPI != nil {
		st.ReadAPI = r.ReadAPI
	}
	if r.DaysKnown {
		st.OperationDays, st.LatestSnapshot = r.OperationDays, r.LatestSnapshot
		if len(st.OperationDays) == 0 {
			st.OperationDays = nil
		}
	}
}

// timePtr truncates to the second the API keeps, so a status read back
// compares equal to the one computed (and no-op writes are skipped).
func timePtr(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func errText(err error, fallback string) string {
	if err == nil {
		return fallback
	}
	return err.Error()
}

// orDefault returns s, or fallback when s is empty.
func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
