package pumppod

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/buildinfo"
	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/store"
)

// Metric label names. Every series carries the FlightFeed's namespace and
// name; only the replica leading a feed has its pump series. The namespace
// label is feed_namespace, not namespace: a scrape's target labels
// (namespace of the manager's pod) would otherwise rename it to
// exported_namespace.
const (
	labelNamespace = "feed_namespace"
	labelFeed      = "feed"
)

// labelValue keeps label values from a malformed message bounded: SIS
// TYPE/STYP codes and tags are a few upper-case letters and digits.
var labelValue = regexp.MustCompile(`^[A-Z0-9]{2,8}$`)

// Metrics are FlightFeed's Prometheus series, registered on the manager's
// metrics endpoint.
type Metrics struct {
	messages       *prometheus.CounterVec
	txDuration     *prometheus.HistogramVec
	batchSize      *prometheus.HistogramVec
	ignoredTags    *prometheus.CounterVec
	serviceErrors  *prometheus.CounterVec
	snapshotFlags  *prometheus.CounterVec
	traceLogErrors *prometheus.CounterVec
	panics         *prometheus.CounterVec
	runnerPanics   *prometheus.CounterVec
	seqnRegress    *prometheus.CounterVec
	queueDepth     *prometheus.GaugeVec
	queueLag       *prometheus.GaugeVec
	headBlocked    *prometheus.GaugeVec
	outboxPending  *prometheus.GaugeVec
	outboxOldest   *prometheus.GaugeVec
	buildInfo      *prometheus.GaugeVec
	kafkaReachable *prometheus.GaugeVec
	outboxParked   *prometheus.GaugeVec
	// mailboxReachable and databaseReachable mirror the pump's
	// MailboxReachable and DatabaseReachable while it runs.
	mailboxReachable  *prometheus.GaugeVec
	databaseReachable *prometheus.GaugeVec
	kafkaRenewed      *prometheus.CounterVec
	// readAPIRejected counts the read API's 429s (not per feed: the cap
	// is the replica's).
	readAPIRejected prometheus.Counter
	// readAPIRequests and readAPIDuration are the read API's requests by
	// route (a fixed set of names) and status code, and their durations
	// by route: per replica, like the cap.
	readAPIRequests *prometheus.CounterVec
	readAPIDuration *prometheus.HistogramVec
	// deliveryLatency is each delivered Kafka record's time from its
	// outbox event's commit to the brokers' acknowledgement.
	deliveryLatency *prometheus.HistogramVec
	// receiptLatency is the same records' time from the mailbox's
	// DATE_RECEIVED of their message to the acknowledgement.
	receiptLatency *prometheus.HistogramVec

	// reg is where the feeds' connection statistics are registered.
	reg             prometheus.Registerer
	backfillPending *prometheus.GaugeVec
	requestsFailed  *prometheus.GaugeVec
	snapshotVersion *prometheus.GaugeVec
	leader          *prometheus.GaugeVec
	fenced          *prometheus.GaugeVec
	pumpRunning     *prometheus.GaugeVec

	// days remembers the ledger days reported per feed, so a day that
	// left the ledger loses its series without the others blinking.
	mu   sync.Mutex
	days map[types.NamespacedName]map[string]bool
	// ignored remembers the ignored-tag label values per feed, so hostile
	// messages with many distinct unmapped tags cannot create unbounded
	// series (beyond maxIgnoredTagSeries a tag counts as OTHER).
	ignored map[types.NamespacedName]map[string]bool
	// msgTypes remembers the type and styp label values of
	// flightfeed_messages_total per feed, bounded the same way
	// (maxMessageTypeSeries each): the mailbox's writer chooses them.
	msgTypes map[types.NamespacedName]*typeLabels
	// renewed is the KafkaClientsRenewed of each feed's last report: the
	// counter adds what the running pump renewed since.
	renewed map[types.NamespacedName]int64
}

// maxIgnoredTagSeries bounds the distinct tag labels of
// flightfeed_ignored_tags_total per feed.
const maxIgnoredTagSeries = 100

// maxMessageTypeSeries bounds the distinct type labels, and the distinct
// styp labels, of flightfeed_messages_total per feed that the interface
// does not define: the interface's own (27 TYPEs, about 85 STYPs:
// sis.KnownType, sis.KnownStyp) are always themselves; beyond the bound
// any other value counts as OTHER.
const maxMessageTypeSeries = 50

// typeLabels are the type and styp label values one feed has used.
type typeLabels struct{ types, styps map[string]bool }

// NewMetrics creates the series and registers them with reg (the
// controller-runtime registry in the manager, a fresh one in tests).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	feed := []string{labelNamespace, labelFeed}
	m := &Metrics{
		reg:      reg,
		days:     map[types.NamespacedName]map[string]bool{},
		ignored:  map[types.NamespacedName]map[string]bool{},
		msgTypes: map[types.NamespacedName]*typeLabels{},
		renewed:  map[types.NamespacedName]int64{},
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightfeed_messages_total",
			Help: "Mailbox messages processed, by SIS TYPE, STYP and result (SUCCEEDED, SKIPPED, DEAD, FAILED).",
		}, append(feed, "type", "styp", "result")),
		txDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flightfeed_transaction_duration_seconds",
			Help:    "Duration of committed pump transactions (one batch of messages).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, feed),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flightfeed_batch_messages",
			Help:    "Messages applied per committed transaction.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}, feed),
		ignoredTags: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightfeed_ignored_tags_total",
			Help: "SIS tags the module does not map (kept in the raw archive), by tag.",
		}, append(feed, "tag")),
		serviceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightfeed_service_errors_total",
			Help: "Failed reads or writes of the pump against a service it depends on, by service (mailbox).",
		}, append(feed, "service")),
		snapshotFlags: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightfeed_snapshot_flags_total",
			Help: "Flags of snapshot trace rows (alerts, processing rules R5.6): EMPTY, RECS_DROP, OUT_OF_ORDER, SEQN_REGRESSION, DAY_MISMATCH, UNSOLICITED, or a refused snapshot's reason.",
		}, append(feed, "flag")),
		traceLogErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightfeed_trace_log_errors_total",
			Help: "Snapshot trace rows (schd_snap_log) that could not be written; nothing else changes.",
		}, feed),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightfeed_message_panics_total",
			Help: "Messages made DEAD (INTERNAL) because decoding or applying them panicked (a bug of FlightFeed; the stack is in the log).",
		}, feed),
		runnerPanics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightfeed_pump_panics_total",
			Help: "Panics of a long-lived part of the feed's pump pod outside a message (a bug of FlightFeed; the stack is in the log), by where: runner (the pump or dispatcher as a whole, restarted by the pod), read-ahead, epoch-renew, database-watch, outbox-flush, status-reporter, lease-holder (each recovered and restarted with backoff).",
		}, append(feed, "where")),
		seqnRegress: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightfeed_seqn_regressions_total",
			Help: "Messages (snapshots, FLOP, ADFT, FDEL) whose SEQN was lower than their sender's previous one in the session, flagged SEQN_REGRESSION (processing rules R9: an alert, the message is applied).",
		}, feed),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_queue_depth",
			Help: "Unprocessed VALID mailbox rows.",
		}, feed),
		queueLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_queue_lag_seconds",
			Help: "Age of the oldest unprocessed mailbox row.",
		}, feed),
		headBlocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_head_blocked_since_timestamp_seconds",
			Help: "Since when the mailbox head has kept failing, in Unix seconds (no series while it is not blocked).",
		}, feed),
		outboxPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_outbox_pending",
			Help: "Kafka events not yet acknowledged by the brokers.",
		}, feed),
		outboxParked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_outbox_parked",
			Help: "Kafka events parked because the brokers refused their records for good (KafkaDegraded; flightfeed parked lists them).",
		}, feed),
		outboxOldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_outbox_oldest_pending_timestamp_seconds",
			Help: "When the oldest pending Kafka event was committed, in Unix seconds (no series while none is pending).",
		}, feed),
		backfillPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_backfill_pending",
			Help: "Committed results not yet written back to the mailbox.",
		}, feed),
		requestsFailed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_requests_failed_days",
			Help: "Days of the request horizon whose full-day request FAILED (its answers refused the same way twice in a row): not asked for again until an operator re-requests them.",
		}, feed),
		snapshotVersion: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_snapshot_version",
			Help: "Snapshot generation of each operation day in the ledger.",
		}, append(feed, "day")),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_leader",
			Help: "1 while this replica holds the feed's Lease.",
		}, feed),
		fenced: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_pump_fenced",
			Help: "1 while this replica leads the feed but another pump (a second deployment on the same database) holds its fencing epoch and renews it: this replica waits and does not take it back.",
		}, feed),
		pumpRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_pump_running",
			Help: "1 while this replica runs the feed's pump.",
		}, feed),
		kafkaReachable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_kafka_reachable",
			Help: "1 while the feed's dispatcher reaches the brokers, 0 while they fail (KafkaReachable).",
		}, feed),
		mailboxReachable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_mailbox_reachable",
			Help: "1 while the feed's pump reaches its MySQL mailbox, 0 while it fails (MailboxReachable).",
		}, feed),
		databaseReachable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_database_reachable",
			Help: "1 while the feed's pump reaches its PostgreSQL database, 0 while it fails (DatabaseReachable).",
		}, feed),
		kafkaRenewed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightfeed_kafka_clients_renewed_total",
			Help: "Kafka clients the feed's dispatcher renewed while this replica led the feed: the broker refused the producer while this replica still led the feed (a transaction past its timeout, or another producer of the feed's transactional id).",
		}, feed),
		readAPIRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flightfeed_read_api_rejected_total",
			Help: "Read API requests this replica refused with 429 because it was already serving its maximum (--api-max-concurrent-requests).",
		}),
		readAPIRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightfeed_read_api_requests_total",
			Help: "Read API requests this replica answered, by route (flights, flight, dead, parked, redeliver, replays, replay; other for no token or an unknown path) and HTTP status code.",
		}, []string{"route", "code"}),
		readAPIDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flightfeed_read_api_request_duration_seconds",
			Help:    "Time this replica took to answer a read API request (authorization included), by route.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"route"}),
		deliveryLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flightfeed_outbox_delivery_latency_seconds",
			Help:    "Per delivered Kafka record: seconds from the pump's commit of its outbox event (msg_event.created_at, the mailbox message's transaction) to the brokers' acknowledgement. Mailbox waiting before the commit is flightfeed_queue_lag_seconds.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}, feed),
		receiptLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flightfeed_delivery_latency_seconds",
			Help:    "Per delivered Kafka record: seconds from the mailbox's DATE_RECEIVED of the message that queued it to the brokers' acknowledgement (what a consumer waits for an AODB message: mailbox wait, processing and delivery).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 18),
		}, feed),
		buildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flightfeed_build_info",
			Help: "Always 1; the labels name the running binary's version, VCS revision and Go version.",
		}, []string{"version", "revision", "goversion"}),
	}
	bi := buildinfo.Read()
	m.buildInfo.WithLabelValues(bi.Version, bi.Revision, bi.GoVersion).Set(1)
	if err := m.register(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// register adds the series to reg. Series already registered there (a
// second manager in the same process) are shared, not duplicated.
func (m *Metrics) register(reg prometheus.Registerer) error {
	for _, p := range []any{&m.messages, &m.txDuration, &m.batchSize, &m.ignoredTags, &m.serviceErrors, &m.snapshotFlags, &m.traceLogErrors, &m.panics, &m.runnerPanics, &m.seqnRegress, &m.queueDepth, &m.queueLag,
		&m.headBlocked, &m.outboxPending, &m.outboxOldest, &m.backfillPending, &m.requestsFailed, &m.snapshotVersion, &m.leader, &m.fenced, &m.pumpRunning, &m.buildInfo, &m.kafkaReachable, &m.outboxParked,
		&m.mailboxReachable, &m.databaseReachable, &m.kafkaRenewed, &m.readAPIRejected, &m.readAPIRequests, &m.readAPIDuration, &m.deliveryLatency, &m.receiptLatency} {
		var err error
		switch v := p.(type) {
		case **prometheus.CounterVec:
			*v, err = registerOrReuse(reg, *v)
		case **prometheus.GaugeVec:
			*v, err = registerOrReuse(reg, *v)
		case **prometheus.HistogramVec:
			*v, err = registerOrReuse(reg, *v)
		case *prometheus.Counter:
			*v, err = registerOrReuse(reg, *v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register metrics: %w", err)
}

// ReadAPIRejected counts the read API requests refused because the
// replica was already serving its maximum.
func (m *Metrics) ReadAPIRejected() prometheus.Counter {
	return m.readAPIRejected
}

// ReadAPIRequests counts the read API's answers by route and code.
func (m *Metrics) ReadAPIRequests() *prometheus.CounterVec { return m.readAPIRequests }

// ReadAPIDuration observes the read API's answer times by route.
func (m *Metrics) ReadAPIDuration() *prometheus.HistogramVec { return m.readAPIDuration }

// DeliveryLatency is the outbox-to-Kafka delivery latency histogram of one
// feed (flightfeed_outbox_delivery_latency_seconds); nil without metrics,
// like the other per-feed accessors.
func (m *Metrics) DeliveryLatency(key types.NamespacedName) prometheus.Observer {
	if m == nil {
		return nil
	}
	return m.deliveryLatency.WithLabelValues(key.Namespace, key.Name)
}

// ReceiptLatency is the mailbox-receipt-to-Kafka delivery latency
// histogram of one feed (flightfeed_delivery_latency_seconds); nil without
// metrics.
func (m *Metrics) ReceiptLatency(key types.NamespacedName) prometheus.Observer {
	if m == nil {
		return nil
	}
	return m.receiptLatency.WithLabelValues(key.Namespace, key.Name)
}

// Observer returns the pump observer of one feed.
func (m *Metrics) Observer(key types.NamespacedName) *FeedObserver {
	return &FeedObserver{m: m, ns: key.Namespace, name: key.Name}
}

// setLeader records whether this replica leads the feed. Losing the lead
// drops the feed's pump series: only the leader knows them.
func (m *Metrics) setLeader(key types.NamespacedName, leading bool) {
	if m == nil {
		return
	}
	if leading {
		m.leader.WithLabelValues(key.Namespace, key.Name).Set(1)
		return
	}
	m.leader.WithLabelValues(key.Namespace, key.Name).Set(0)
	m.dropPumpSeries(key)
}

// Where labels of flightfeed_pump_panics_total for the pump pod's own
// goroutines (the pump's and the dispatcher's name theirs).
const (
	whereRunner         = "runner"
	whereStatusReporter = "status-reporter"
	whereLeaseHolder    = "lease-holder"
)

// countLoopPanic counts a panic recovered in one of the feed's long-lived
// goroutines (where names it).
func (m *Metrics) countLoopPanic(key types.NamespacedName, where string) {
	if m == nil {
		return
	}
	m.runnerPanics.WithLabelValues(key.Namespace, key.Name, boundedWhere(where)).Inc()
}

// boundedWhere keeps the where label to the known goroutines.
func boundedWhere(w string) string {
	switch w {
	case whereRunner, whereStatusReporter, whereLeaseHolder, pump.WhereReadAhead, pump.WhereEpochRenew, pump.WhereDatabaseWatch,
		dispatch.WhereOutboxFlush:
		return w
	}
	return "other"
}

// setFenced says whether the feed's leader waits for another pump that
// holds its fencing epoch.
func (m *Metrics) setFenced(key types.NamespacedName, fenced bool) {
	if m == nil {
		return
	}
	m.fenced.WithLabelValues(key.Namespace, key.Name).Set(boolFloat(fenced))
}

// forget drops every series of a feed (it was deleted).
func (m *Metrics) forget(key types.NamespacedName) {
	if m == nil {
		return
	}
	m.leader.DeleteLabelValues(key.Namespace, key.Name)
	m.dropPumpSeries(key)
}

func (m *Metrics) dropPumpSeries(key types.NamespacedName) {
	m.mu.Lock()
	delete(m.days, key)
	delete(m.renewed, key)
	// Their series go below: the bounds start afresh.
	delete(m.ignored, key)
	delete(m.msgTypes, key)
	m.mu.Unlock()
	match := prometheus.Labels{labelNamespace: key.Namespace, labelFeed: key.Name}
	for _, c := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.messages, m.txDuration, m.batchSize, m.ignoredTags, m.snapshotFlags, m.traceLogErrors, m.panics, m.seqnRegress, m.queueDepth, m.queueLag, m.headBlocked,
		m.outboxPending, m.outboxOldest, m.backfillPending, m.requestsFailed, m.snapshotVersion, m.pumpRunning, m.fenced, m.kafkaReachable, m.outboxParked,
		m.mailboxReachable, m.databaseReachable, m.kafkaRenewed, m.deliveryLatency, m.receiptLatency} {
		c.DeletePartialMatch(match)
	}
}

// report sets the gauges from one status report of the leader.
func (m *Metrics) report(key types.NamespacedName, running bool, st feedrun.Status, ledger []store.LedgerDay, now time.Time) {
	if m == nil {
		return
	}
	ns, name := key.Namespace, key.Name
	m.pumpRunning.WithLabelValues(ns, name).Set(boolFloat(running))
	if ledger != nil {
		m.reportDays(key, ledger)
	}
	if !running {
		// No pump, no figures: a queue depth of 0 would be a lie.
		for _, g := range []*prometheus.GaugeVec{m.queueDepth, m.queueLag, m.headBlocked, m.outboxPending, m.outboxOldest, m.backfillPending,
			m.requestsFailed, m.kafkaReachable, m.outboxParked, m.mailboxReachable, m.databaseReachable} {
			g.DeleteLabelValues(ns, name)
		}
		// The counter stays while this replica leads; the next pump
		// counts from 0 again.
		m.mu.Lock()
		delete(m.renewed, key)
		m.mu.Unlock()
		return
	}
	m.queueDepth.WithLabelValues(ns, name).Set(float64(st.QueueDepth))
	m.queueLag.WithLabelValues(ns, name).Set(st.Lag.Seconds())
	// Moments are exported as timestamps (Prometheus' convention: the
	// age is time() minus them, and stays right between reports).
	if st.HeadBlockedSince.IsZero() {
		m.headBlocked.DeleteLabelValues(ns, name)
	} else {
		m.headBlocked.WithLabelValues(ns, name).Set(unixSeconds(st.HeadBlockedSince))
	}
	m.outboxPending.WithLabelValues(ns, name).Set(float64(st.OutboxPending))
	if st.OutboxPending == 0 {
		m.outboxOldest.DeleteLabelValues(ns, name)
	} else {
		m.outboxOldest.WithLabelValues(ns, name).Set(unixSeconds(now.Add(-st.OutboxOldestAge)))
	}
	m.backfillPending.WithLabelValues(ns, name).Set(float64(st.BackfillPending))
	m.requestsFailed.WithLabelValues(ns, name).Set(float64(len(st.FailedRequests)))
	m.kafkaReachable.WithLabelValues(ns, name).Set(boolFloat(st.KafkaReachable))
	m.mailboxReachable.WithLabelValues(ns, name).Set(boolFloat(st.MailboxReachable))
	m.databaseReachable.WithLabelValues(ns, name).Set(boolFloat(st.DatabaseReachable))
	m.countRenewed(key, st.KafkaClientsRenewed)
	m.outboxParked.WithLabelValues(ns, name).Set(float64(st.OutboxParked))
}

// countRenewed adds to flightfeed_kafka_clients_renewed_total what the
// running pump's dispatcher renewed since the last report (n counts since
// that pump started; less than last time means a new pump).
func (m *Metrics) countRenewed(key types.NamespacedName, n int64) {
	m.mu.Lock()
	last := m.renewed[key]
	m.renewed[key] = n
	m.mu.Unlock()
	if n < last {
		last = 0
	}
	// Add(0) too: the series exists from the first report on.
	m.kafkaRenewed.WithLabelValues(key.Namespace, key.Name).Add(float64(n - last))
}

// reportDays sets the version of every ledger day and drops the series of
// days that left the ledger (retention).
func (m *Metrics) reportDays(key types.NamespacedName, ledger []store.LedgerDay) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := make(map[string]bool, len(ledger))
	for _, d := range ledger {
		now[d.Day] = true
		m.snapshotVersion.WithLabelValues(key.Namespace, key.Name, d.Day).Set(float64(d.Version))
	}
	for day := range m.days[key] {
		if !now[day] {
			m.snapshotVersion.DeleteLabelValues(key.Namespace, key.Name, day)
		}
	}
	m.days[key] = now
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// FeedRegisterer is where one feed's connection statistics are
// registered: the manager's registry, each series labelled with the feed.
func (m *Metrics) FeedRegisterer(key types.NamespacedName) prometheus.Registerer {
	if m == nil || m.reg == nil {
		return nil
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{labelNamespace: key.Namespace, labelFeed: key.Name}, m.reg)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// FeedObserver receives one feed's pump observations (it satisfies the
// pump's Observer interface). The zero value records nothing.
type FeedObserver struct {
	m        *Metrics
	ns, name string
}

// MessageDone counts one message by type, subtype and result.
func (o *FeedObserver) MessageDone(msgType, styp, result string) {
	if o == nil || o.m == nil {
		return
	}
	t, s := o.m.typeLabels(types.NamespacedName{Namespace: o.ns, Name: o.name}, bounded(msgType), bounded(styp))
	o.m.messages.WithLabelValues(o.ns, o.name, t, s, boundedResult(result)).Inc()
}

// BatchCommitted records one committed transaction.
func (o *FeedObserver) BatchCommitted(messages int, took time.Duration) {
	if o == nil || o.m == nil {
		return
	}
	o.m.txDuration.WithLabelValues(o.ns, o.name).Observe(took.Seconds())
	o.m.batchSize.WithLabelValues(o.ns, o.name).Observe(float64(messages))
}

// IgnoredTags counts SIS tags the module does not map.
func (o *FeedObserver) IgnoredTags(tags map[string]int) {
	if o == nil || o.m == nil {
		return
	}
	for tag, n := range tags {
		o.m.ignoredTags.WithLabelValues(o.ns, o.name, o.m.ignoredLabel(types.NamespacedName{Namespace: o.ns, Name: o.name}, bounded(tag))).Add(float64(n))
	}
}

// ServiceError counts one failed read or write against a service.
func (o *FeedObserver) ServiceError(service string) {
	if o == nil || o.m == nil {
		return
	}
	o.m.serviceErrors.WithLabelValues(o.ns, o.name, service).Inc()
}

// SnapshotFlag counts one flag of a snapshot's trace row.
func (o *FeedObserver) SnapshotFlag(flag string) {
	if o == nil || o.m == nil {
		return
	}
	if !flagValue.MatchString(flag) {
		flag = "OTHER"
	}
	o.m.snapshotFlags.WithLabelValues(o.ns, o.name, flag).Inc()
}

// TraceLogFailed counts a trace row that could not be written.
func (o *FeedObserver) TraceLogFailed() {
	if o == nil || o.m == nil {
		return
	}
	o.m.traceLogErrors.WithLabelValues(o.ns, o.name).Inc()
}

// MessagePanicked counts a message made DEAD (INTERNAL) by a panic.
func (o *FeedObserver) MessagePanicked() {
	if o == nil || o.m == nil {
		return
	}
	o.m.panics.WithLabelValues(o.ns, o.name).Inc()
}

// LoopPanicked counts a panic recovered in one of the pump's or the
// dispatcher's long-lived goroutines.
func (o *FeedObserver) LoopPanicked(where string) {
	if o == nil || o.m == nil {
		return
	}
	o.m.countLoopPanic(types.NamespacedName{Namespace: o.ns, Name: o.name}, where)
}

// SeqnRegression counts a message flagged SEQN_REGRESSION.
func (o *FeedObserver) SeqnRegression() {
	if o == nil || o.m == nil {
		return
	}
	o.m.seqnRegress.WithLabelValues(o.ns, o.name).Inc()
}

// flagValue bounds flag labels: the pump's flags and reason codes.
var flagValue = regexp.MustCompile(`^[A-Z][A-Z0-9_]{1,39}$`)

// ignoredLabel returns tag while the feed has fewer than
// maxIgnoredTagSeries tag labels (or already has this one), else OTHER.
func (m *Metrics) ignoredLabel(feed types.NamespacedName, tag string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.ignored[feed]
	if seen == nil {
		seen = map[string]bool{}
		m.ignored[feed] = seen
	}
	return capLabel(seen, tag, maxIgnoredTagSeries)
}

// typeLabels returns the type and styp labels of a message: each as it
// is while the feed has fewer than maxMessageTypeSeries such labels (or
// already has this one), else OTHER.
func (m *Metrics) typeLabels(feed types.NamespacedName, typ, styp string) (string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.msgTypes[feed]
	if seen == nil {
		seen = &typeLabels{types: map[string]bool{}, styps: map[string]bool{}}
		m.msgTypes[feed] = seen
	}
	if !sis.KnownType(typ) {
		typ = capLabel(seen.types, typ, maxMessageTypeSeries)
	}
	if !sis.KnownStyp(styp) {
		styp = capLabel(seen.styps, styp, maxMessageTypeSeries)
	}
	return typ, styp
}

// capLabel returns v while seen holds fewer than limit values (or holds
// v), recording it; else OTHER. OTHER and NONE are always themselves.
func capLabel(seen map[string]bool, v string, limit int) string {
	if seen[v] || v == "OTHER" || v == "NONE" {
		return v
	}
	if len(seen) >= limit {
		return "OTHER"
	}
	seen[v] = true
	return v
}

func bounded(v string) string {
	if labelValue.MatchString(v) {
		return v
	}
	if v == "" {
		return "NONE"
	}
	return "OTHER"
}

func boundedResult(r string) string {
	switch r {
	case store.StatusSucceeded, store.StatusSkipped, store.StatusDead, store.StatusFailed:
		return r
	}
	return "OTHER"
}
