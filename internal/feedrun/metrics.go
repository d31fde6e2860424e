package feedrun

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/store"
)

// clientMetrics are the statistics of a feed's three connections: the
// Kafka client (franz-go's kprom: flightfeed_kafka_*), the PostgreSQL pool
// (flightfeed_database_pool_*) and the MySQL mailbox's database/sql pool
// (go_sql_*{db_name="mailbox"}). They are gathered into one set that is
// registered once the connections exist and unregistered on Close, so a
// runner that ends takes its series with it and two runners of one feed
// (never at once in the operator) cannot make a registration panic.
type clientMetrics struct {
	reg prometheus.Registerer
	set collectorSet
	ok  bool
}

func newClientMetrics(reg prometheus.Registerer) *clientMetrics {
	return &clientMetrics{reg: reg}
}

// kafka is the kprom plugin, hooked into the producer: it records its
// collectors into the set when the client is created.
func (m *clientMetrics) kafka() *kprom.Metrics {
	return kprom.NewMetrics("flightfeed", kprom.Subsystem("kafka"), kprom.Registerer(&m.set),
		kprom.FetchAndProduceDetail(kprom.ByNode, kprom.ByTopic, kprom.Records, kprom.Batches,
			kprom.UncompressedBytes, kprom.CompressedBytes, kprom.ConsistentNaming))
}

// register adds the pools' collectors and registers the whole set.
func (m *clientMetrics) register(st *store.Store, mbox *mailbox.Mailbox) error {
	m.set.MustRegister(poolCollector{st: st}, collectors.NewDBStatsCollector(mbox.DB(), "mailbox"))
	if err := m.reg.Register(&m.set); err != nil {
		return err
	}
	m.ok = true
	return nil
}

func (m *clientMetrics) unregister() {
	if m.ok {
		m.reg.Unregister(&m.set)
		m.ok = false
	}
}

// collectorSet is a prometheus.Registerer that only records collectors, and
// a prometheus.Collector of everything it recorded.
type collectorSet struct {
	mu  sync.Mutex
	all []prometheus.Collector
}

func (s *collectorSet) Register(c prometheus.Collector) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, c)
	return nil
}

func (s *collectorSet) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = s.Register(c) // never fails
	}
}

func (s *collectorSet) Unregister(c prometheus.Collector) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, have := range s.all {
		if have == c {
			s.all = append(s.all[:i], s.all[i+1:]...)
			return true
		}
	}
	return false
}

func (s *collectorSet) collectors() []prometheus.Collector {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]prometheus.Collector(nil), s.all...)
}

func (s *collectorSet) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range s.collectors() {
		c.Describe(ch)
	}
}

func (s *collectorSet) Collect(ch chan<- prometheus.Metric) {
	for _, c := range s.collectors() {
		c.Collect(ch)
	}
}

// poolCollector exports the PostgreSQL pool's statistics (pgxpool.Stat).
type poolCollector struct{ st *store.Store }

var (
	poolAcquired     = poolDesc("acquired_conns", "Connections of the feed's PostgreSQL pool in use.")
	poolIdle         = poolDesc("idle_conns", "Idle connections of the feed's PostgreSQL pool.")
	poolTotal        = poolDesc("total_conns", "Connections of the feed's PostgreSQL pool (in use, idle, being opened).")
	poolMax          = poolDesc("max_conns", "Size limit of the feed's PostgreSQL pool (database.maxConns).")
	poolAcquires     = poolDesc("acquires_total", "Connections taken from the feed's PostgreSQL pool.")
	poolAcquireSecs  = poolDesc("acquire_duration_seconds_total", "Time spent waiting for a connection of the feed's PostgreSQL pool.")
	poolEmptyWaits   = poolDesc("empty_acquires_total", "Acquires that waited because the feed's PostgreSQL pool was empty.")
	poolCanceledWait = poolDesc("canceled_acquires_total", "Acquires of the feed's PostgreSQL pool cancelled while waiting.")
	poolNewConns     = poolDesc("new_conns_total", "Connections the feed's PostgreSQL pool opened.")
)

func poolDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("flightfeed_database_pool_"+name, help, nil, nil)
}

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolAcquired, poolIdle, poolTotal, poolMax, poolAcquires, poolAcquireSecs, poolEmptyWaits, poolCanceledWait, poolNewConns} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.st.PoolStat()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(poolAcquired, float64(s.AcquiredConns()))
	gauge(poolIdle, float64(s.IdleConns()))
	gauge(poolTotal, float64(s.TotalConns()))
	gauge(poolMax, float64(s.MaxConns()))
	counter(poolAcquires, float64(s.AcquireCount()))
	counter(poolAcquireSecs, s.AcquireDuration().Seconds())
	counter(poolEmptyWaits, float64(s.EmptyAcquireCount()))
	counter(poolCanceledWait, float64(s.CanceledAcquireCount()))
	counter(poolNewConns, float64(s.NewConnsCount()))
}

// DescribeClientMetrics sends the descriptions of a feed's connection
// statistics (the Kafka client's, the PostgreSQL pool's, the mailbox
// pool's) without connecting anywhere: the chart's dashboard and alerts
// are checked against them. The Kafka client's series exist once a client
// does, so one is made, with a seed that is never dialled, and closed.
func DescribeClientMetrics(ch chan<- *prometheus.Desc) error {
	var m clientMetrics
	client, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.WithHooks(m.kafka()))
	if err != nil {
		return err
	}
	defer client.Close()
	m.set.MustRegister(poolCollector{}, collectors.NewDBStatsCollector(nil, "mailbox"))
	m.set.Describe(ch)
	return nil
}
