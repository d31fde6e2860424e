package pumppod

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/store"
)

// reporter writes the leader's view of the feed: status, FlightFeedDays,
// Events and metrics. It lives as long as one leadership.
type reporter struct {
	s *feedSupervisor

	// What the last report saw, to notice changes between reports.
	sig        pumpSignature
	prevRunner FeedRunner
	prevPump   feedrun.Status
	configErr  string

	// figuresAt is when the status was last written (with the figures of
	// the moment); daysAt and daySet when and for which days the
	// FlightFeedDays were last synced.
	figuresAt, daysAt time.Time
	daySet            string
}

// pumpSignature is the part of a pump's report that, when it changes,
// is written at once instead of at the next periodic report.
type pumpSignature struct {
	phase                    runPhase
	running, currentConfig   bool
	mailbox, database, kafka bool
	headBlocked              bool
	dead                     int64
	generation               int64
	configErr                string
}

// reportLoop reports at once, then every report interval, when poked and
// when the pump's signature changes.
func (s *feedSupervisor) reportLoop(ctx context.Context) {
	r := &reporter{s: s}
	interval := s.deps.reportInterval
	ticker := s.deps.clock.NewTicker(interval)
	defer ticker.Stop()
	watch := s.deps.clock.NewTicker(max(interval/5, 100*time.Millisecond))
	defer watch.Stop()
	r.report(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			r.report(ctx)
		case <-s.poke:
			r.report(ctx)
		case <-watch.C():
			if in, _ := s.snapshot(); r.signature(in) != r.sig {
				r.report(ctx)
			}
		}
	}
}

// snapshot collects a report's inputs except the ledger.
func (s *feedSupervisor) snapshot() (reportInput, *store.Store) {
	s.mu.Lock()
	d, st := s.desired, s.st
	s.mu.Unlock()
	in := reportInput{
		Now:           s.deps.clock.Now(),
		Generation:    d.Generation,
		Identity:      s.deps.identity,
		Leading:       st.leading,
		Terminating:   d.Terminating,
		ConfigErr:     d.ConfigErr,
		Phase:         st.phase,
		CurrentConfig: st.runnerHash == d.Hash,
		LastErr:       st.lastErr,
		DatabaseErr:   st.databaseErr,
		MailboxErr:    st.mailboxErr,
		SchemaVersion: st.schemaVersion,
		Epoch:         st.epoch,
		Since:         st.since,
		ReadAccess:    readAccess(d.Feed),
	}
	if d.Feed != nil {
		in.Plaintext, in.Unverified, in.WeakAuth, in.PlaintextKnown = d.Plaintext, d.Unverified, d.WeakAuth, true
	}
	if st.runner != nil {
		in.Pump = st.runner.Status()
	}
	if d.Feed != nil {
		in.LedgerCutoff = ledgerCutoff(in.Now, d.Feed)
	}
	return in, st.ledger
}

// ledgerCutoff is the first day the feed's ledger retention keeps, as the
// pump's lifecycle job computes it ("" when retention keeps every day).
func ledgerCutoff(now time.Time, feed *config.Feed) string {
	days := feed.Spec.Retention.LedgerDays
	if days == nil || *days <= 0 || feed.Location == nil {
		return ""
	}
	return now.In(feed.Location).AddDate(0, 0, -int(*days)).Format(time.DateOnly)
}

func (r *reporter) signature(in reportInput) pumpSignature {
	return pumpSignature{
		phase: in.Phase, running: in.Pump.Running, currentConfig: in.CurrentConfig,
		mailbox: in.Pump.MailboxReachable, database: in.Pump.DatabaseReachable, kafka: in.Pump.KafkaReachable,
		headBlocked: !in.Pump.HeadBlockedSince.IsZero(), dead: in.Pump.Counts[store.StatusDead],
		generation: in.Generation, configErr: errText(in.ConfigErr, ""),
	}
}

// report writes one report. Failures are logged and retried at the next.
func (r *reporter) report(ctx context.Context) {
	failpoint.Panic(failpoint.StatusReport)
	s := r.s
	in, db := s.snapshot()
	if !in.Leading {
		return
	}
	if db != nil {
		ledgerCtx, cancel := context.WithTimeout(ctx, s.deps.reportInterval)
		ledger, err := db.Ledger(ledgerCtx)
		cancel()
		if err != nil {
			s.log.Info("read the ledger", "error", err.Error())
		} else {
			in.Ledger, in.LedgerKnown = ledger, true
		}
	}
	rep := buildStatus(in)
	d := s.getDesired()
	figuresDue := r.figuresAt.IsZero() || in.Now.Sub(r.figuresAt) >= s.deps.figuresInterval
	var moved *brokersMove
	wrote, err := s.deps.status.update(ctx, s.key, d.UID, func(st *v1alpha1.FlightFeedStatus) {
		moved = nil
		if d.Feed != nil && d.Generation == in.Generation {
			moved = recordKafkaCredentials(st, &d.Feed.Spec, d.Generation, in.Now)
		}
		if !figuresDue && onlyFiguresMoved(st, rep, in.Now) {
			return
		}
		applyReport(st, rep, in.Now)
	})
	if err == nil && moved != nil {
		s.event(corev1.EventTypeWarning, ReasonKafkaBrokersChanged, "Configure", "%s", moved.String())
	}
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, errStale) {
			s.log.Error(err, "write status")
		}
	} else if wrote {
		r.figuresAt = in.Now
	}
	if in.LedgerKnown && !d.Terminating {
		keep := config.DefaultFlightFeedDays
		if d.Feed != nil {
			keep = int(d.Feed.Spec.Retention.FlightFeedDays)
		}
		// A new (or expired) day is synced at once, versions at most every
		// figures interval.
		set := daySet(newestDays(in.Ledger, keep))
		if set != r.daySet || r.daysAt.IsZero() || in.Now.Sub(r.daysAt) >= s.deps.figuresInterval {
			if _, err := s.deps.days.sync(ctx, s.key, d.UID, in.Ledger, keep); err != nil {
				if ctx.Err() == nil {
					s.log.Error(err, "sync flightfeeddays")
				}
			} else {
				r.daySet, r.daysAt = set, in.Now
			}
		}
	}
	r.events(in)
	var ledger []store.LedgerDay
	if in.LedgerKnown {
		ledger = in.Ledger
	}
	s.deps.metrics.report(s.key, in.Phase == phaseRunning && in.Pump.Running, in.Pump, ledger, in.Now)
	r.sig = r.signature(in)
}

// onlyFiguresMoved reports whether writing rep into st would change
// nothing but fast-moving figures: the counts, rate, lag, queue depth and
// processed ids of the pump, the outbox and backfill figures, and the
// versions of days already listed. Such a write waits for the figures
// interval; anything else (a condition, the generation, the holder, a day
// added or removed, the schema version) is written at once.
func onlyFiguresMoved(st *v1alpha1.FlightFeedStatus, rep statusReport, now time.Time) bool {
	kept := rep
	if rep.Pump != nil && st.Pump != nil {
		p := *rep.Pump
		p.LastProcessedID, p.HeadID, p.QueueDepth = st.Pump.LastProcessedID, st.Pump.HeadID, st.Pump.QueueDepth
		p.Lag, p.Counts, p.MessagesPerSecond = st.Pump.Lag, st.Pump.Counts, st.Pump.MessagesPerSecond
		kept.Pump = &p
	}
	if rep.Outbox != nil && st.Outbox != nil {
		kept.Outbox = st.Outbox
	}
	if rep.Backfill != nil && st.Backfill != nil {
		kept.Backfill = st.Backfill
	}
	if rep.DaysKnown && sameDays(rep.OperationDays, st.OperationDays) {
		kept.OperationDays = st.OperationDays
		if rep.LatestSnapshot != nil && st.LatestSnapshot != nil && rep.LatestSnapshot.Day == st.LatestSnapshot.Day {
			kept.LatestSnapshot = st.LatestSnapshot
		}
	}
	trial := st.DeepCopy()
	applyReport(trial, kept, now)
	return equality.Semantic.DeepEqual(*trial, *st)
}

// sameDays reports whether a and b list the same days, whatever their
// figures.
func sameDays(a, b []v1alpha1.OperationDayStatus) bool {
	return slices.EqualFunc(a, b, func(x, y v1alpha1.OperationDayStatus) bool { return x.Day == y.Day })
}

// daySet names a set of ledger days.
func daySet(days []store.LedgerDay) string {
	names := make([]string, len(days))
	for i, d := range days {
		names[i] = d.Day
	}
	return strings.Join(names, ",")
}

// events records what changed since the previous report.
func (r *reporter) events(in reportInput) {
	s := r.s
	if msg := errText(in.ConfigErr, ""); msg != r.configErr {
		r.configErr = msg
		if msg != "" {
			reason := ReasonConfigInvalid
			switch configReason(in.ConfigErr) {
			case v1alpha1.ReasonSecretNotLabeled:
				reason = ReasonSecretNotLabeled
			case v1alpha1.ReasonSecretNotForFeed:
				reason = ReasonSecretNotForFeed
			case v1alpha1.ReasonBrokersNotAllowed:
				reason = ReasonBrokersNotAllowed
			}
			s.event(corev1.EventTypeWarning, reason, "Configure", "%s", msg)
		}
	}
	s.mu.Lock()
	runner := s.st.runner
	s.mu.Unlock()
	if runner == nil {
		return
	}
	p := in.Pump
	samePump := runner == r.prevRunner
	prev := r.prevPump
	if !samePump {
		prev = feedrun.Status{}
	}
	switch {
	case !p.HeadBlockedSince.IsZero() && (prev.HeadBlockedSince.IsZero() || prev.HeadID != p.HeadID):
		s.event(corev1.EventTypeWarning, ReasonHeadBlocked, "Process", "mailbox row %d keeps failing since %s: %s",
			p.HeadID, p.HeadBlockedSince.UTC().Format(time.RFC3339), p.HeadLastError)
	case p.HeadBlockedSince.IsZero() && !prev.HeadBlockedSince.IsZero():
		s.event(corev1.EventTypeNormal, ReasonHeadUnblocked, "Process", "mailbox row %d no longer blocks the head", prev.HeadID)
	}
	if n := p.OutboxParkedTotal - prev.OutboxParkedTotal; n > 0 && p.LastParked != nil {
		l := p.LastParked
		s.event(corev1.EventTypeWarning, ReasonEventParked, "Deliver",
			"%d outbox event(s) parked; latest: event %d, %s of flight %s at version %d (mailbox row %d), %s: %s; see flightfeed parked",
			n, l.EventID, parkedKind(l.Kind), l.FLID, l.StateVersion, l.MessageID, l.Reason, l.Error)
	}
	if src, ok := runner.(NoticeSource); ok {
		r.notices(src.DrainNotices())
	} else if dead := p.Counts[store.StatusDead] - prev.Counts[store.StatusDead]; dead > 0 {
		s.event(corev1.EventTypeWarning, ReasonDeadMessage, "Process",
			"%d message(s) became DEAD (newest processed mailbox row %d); see proc_state and the mailbox note column", dead, p.LastProcessedID)
	}
	r.prevRunner, r.prevPump = runner, p
}

func (r *reporter) notices(ns []pump.Notice) {
	for i, n := range ns {
		if i == maxNoticesPerReport {
			r.s.event(corev1.EventTypeWarning, ReasonDeadMessage, "Process", "%d more notable message(s) not listed as events", len(ns)-i)
			return
		}
		reason := string(n.Kind)
		if reason == "" {
			reason = ReasonDeadMessage
		}
		r.s.event(corev1.EventTypeWarning, reason, "Process", "mailbox row %d: %s: %s", n.MessageID, n.Reason, n.Detail)
	}
}

// finalReport is the last status of a holder stepping down: no pump runs
// until the next holder reports.
func (s *feedSupervisor) finalReport(ctx context.Context) {
	d := s.getDesired()
	in := reportInput{Now: s.deps.clock.Now(), Generation: d.Generation, Identity: s.deps.identity,
		Terminating: d.Terminating, ConfigErr: d.ConfigErr}
	rep := buildStatus(in)
	if _, err := s.deps.status.update(ctx, s.key, d.UID, func(st *v1alpha1.FlightFeedStatus) { applyReport(st, rep, in.Now) }); err != nil && !errors.Is(err, errStale) {
		s.log.Error(err, "write the last status")
	}
	s.deps.metrics.report(s.key, false, feedrun.Status{}, nil, in.Now)
}
