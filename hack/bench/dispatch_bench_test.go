package bench

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// BenchmarkDispatchBacklog drains an outbox backlog into an in-process
// kfake broker over loopback TCP: a full-day snapshot of 2,000 realistic
// flights (FLIGHTFEED_BENCH_FLIGHTS overrides) and then 9 window snapshots
// that change every flight again, 40,000 events in all. Coalescing sends
// 2,000 state records and 20,000 notices. Each pass is one Kafka
// transaction; FLIGHTFEED_BENCH_TRANSACTIONS=false measures the plain
// idempotent producer instead.
//
//	go test -bench DispatchBacklog -run '^$' -benchtime 1x ./hack/bench/
func BenchmarkDispatchBacklog(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("FLIGHTFEED_BENCH_FLIGHTS")); err == nil && v > 0 {
		n = v
	}
	const rounds = 10
	var took time.Duration
	var events, records, bytes int64
	for i := 0; i < b.N; i++ {
		s, epoch := benchStore(b)
		for r := range rounds {
			if err := applyRound(s, epoch, int64(r+1), n, r); err != nil {
				b.Fatal(err)
			}
		}
		pending, _, err := s.OutboxStats(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		bytes += payloadBytes(b, s)
		d := benchDispatcher(b, s, epoch)
		start := time.Now()
		for {
			k, err := d.DeliverOnce(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if k == 0 {
				break
			}
		}
		took += time.Since(start)
		st := d.Status()
		events += pending
		records += st.Delivered
		s.Close()
	}
	sec := took.Seconds()
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "drain-ms")
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(float64(records)/sec, "records/s")
	b.ReportMetric(float64(bytes)/sec/1e6, "delivered-MB/s")
}

// BenchmarkDispatchLatency measures commit → broker acknowledgement with
// Run woken by Notify, one FLOP at a time (p50 and p99 over b.N commits).
//
//	go test -bench DispatchLatency -run '^$' -benchtime 500x ./hack/bench/
func BenchmarkDispatchLatency(b *testing.B) {
	s, epoch := benchStore(b)
	defer s.Close()
	d := benchDispatcher(b, s, epoch)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := d.Status().Delivered
		tx, err := s.Begin(ctx, epoch)
		if err != nil {
			b.Fatal(err)
		}
		_, err = storetest.ApplyIncrement(ctx, tx, store.Meta{MessageID: int64(i + 1), Type: "FLOP", Styp: "ESTT"},
			[]flight.Commands{{FLID: flight.FLID(1 + i%50), Cmds: []flight.Command{{Tag: "ESTT", Op: flight.OpSet, Value: "09SEP26" + strconv.Itoa(1000+i%1000)}}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		d.Notify()
		for d.Status().Delivered < before+2 {
			time.Sleep(50 * time.Microsecond)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func benchDispatcher(b *testing.B, s *store.Store, epoch int64) *dispatch.Dispatcher {
	brokers := kafkatest.New(b, config.DefaultStateTopic, config.DefaultNoticeTopic)
	feed := &config.Feed{Namespace: "bench", Name: b.Name()}
	feed.Spec.Kafka.Brokers = brokers
	if os.Getenv("FLIGHTFEED_BENCH_TRANSACTIONS") == "false" {
		off := false
		feed.Spec.Kafka.Transactions = &off
	}
	config.SetDefaults(&feed.Spec)
	cl, err := dispatch.NewClient(feed)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	d, err := dispatch.New(s, cl, feed, dispatch.Options{Epoch: epoch})
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// applyRound writes round r: a full-day snapshot first, then window
// snapshots in which every flight's ESTT changes.
func applyRound(s *store.Store, epoch, msg int64, n, r int) error {
	recs := benchRecords(n, 0)
	for i := range recs {
		cmds := slices.Clone(recs[i].Cmds.Cmds)
		for j := range cmds {
			if cmds[j].Tag == "ESTT" {
				cmds[j].Value = "09SEP26" + strconv.Itoa(1000+r)
			}
		}
		recs[i].Cmds.Cmds = cmds
	}
	ctx := context.Background()
	tx, err := s.Begin(ctx, epoch)
	if err != nil {
		return err
	}
	if _, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: msg, Type: "SCHD", Styp: "DNLD"},
		store.Snapshot{FullDay: r == 0, Day: "2026-09-09", Records: recs}); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// payloadBytes sums the payloads the next passes will publish.
func payloadBytes(b *testing.B, s *store.Store) int64 {
	ev, err := s.PendingEvents(context.Background(), 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, e := range ev {
		n += int64(len(e.Payload))
	}
	return n
}
