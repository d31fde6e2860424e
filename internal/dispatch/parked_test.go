package dispatch_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/recsize"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
)

// incompressible is n bytes of base64 text of random bytes (seeded): no
// codec shrinks it below three quarters.
func incompressible(n int) string {
	r := rand.New(rand.NewPCG(19, 19))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// A record the broker refuses for good (its topics accept 20000 bytes, the
// state is larger) is parked with its error: it does not hold back the
// other flights, nor the next version of its own flight, which supersedes
// it; Status and the store say which flight and why. With and without
// transactions: inside a transaction the refused record must not keep the
// pass's other records from committing.
func TestRecordRefusedForGoodIsParked(t *testing.T) {
	for _, mode := range []struct{ name, extra string }{
		{"transactions", ""},
		{"idempotent", "  transactions: false"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t)
			brokers := kafkatest.NewLimited(t, 20000, 3, stateTopic, noticeTopic)
			d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, mode.extra), fastRetry, fastClient()...)

			e.snapshot(rec(1, "CA1"), rec(2, "CA2"), rec(3, "CA3"), rec(4, "CA4"))
			bigV := e.flop(2, "REMC", incompressible(60_000))
			for i, f := range []flight.FLID{1, 3, 4} {
				e.flop(f, "ESTT", "09SEP26110"+string(rune('0'+i)))
			}
			run(t, d)
			d.Notify()
			idle(t, d)

			parked, err := e.store.ParkedEvents(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(parked) != 1 || parked[0].FLID != 2 || parked[0].Kind != store.KindState || parked[0].StateVersion != bigV ||
				!strings.Contains(parked[0].LastError, "MESSAGE_TOO_LARGE") || parked[0].Attempts < 1 || parked[0].ParkedAt.IsZero() {
				t.Fatalf("parked: %+v, want flight 2's state v%d refused as MESSAGE_TOO_LARGE", parked, bigV)
			}
			st := d.Status()
			if st.Parked != 1 || st.ParkedTotal != 1 || st.LastParked == nil || st.LastParked.FLID != 2 ||
				st.LastParked.Reason != dispatch.ReasonRecordTooLarge || st.Failing {
				t.Fatalf("status after parking: %+v (last parked %+v)", st, st.LastParked)
			}
			// Every other flight's newest state is on the topic, and
			// flight 2's older states were not sent after its newer one.
			latest := dispatchtest.Latest(dispatchtest.Records(t, brokers, stateTopic))
			for _, f := range []string{"1", "3", "4"} {
				if _, ok := latest[f]; !ok {
					t.Errorf("flight %s's state is not on the topic", f)
				}
			}

			// The next version of flight 2 goes out and supersedes the
			// parked one.
			nextV := e.flop(2, "REMC", "short again")
			d.Notify()
			idle(t, d)
			if n := e.count(`SELECT count(*) FROM msg_event_parked`); n != 0 {
				t.Fatalf("%d events still parked after a newer state of the flight was delivered", n)
			}
			if n := e.count(`SELECT count(*) FROM msg_event_record WHERE kind = 'KAFKA_SCHD' AND flid = 2 AND state_version = $1
				AND id <= (SELECT delivered_id FROM msg_event_cursor)`, bigV); n != 1 {
				t.Fatalf("the parked state v%d is not done (superseded)", bigV)
			}
			records := dispatchtest.Records(t, brokers, stateTopic)
			dispatchtest.AssertVersionsRise(t, records)
			dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
			if got := dispatchtest.Latest(records)["2"]; !strings.Contains(string(got), "short again") {
				t.Fatalf("flight 2 on the topic: %s, want v%d", got, nextV)
			}
			assertAllNotices(t, e, brokers)
		})
	}
}

// The door (package recsize) counts a record as the broker does: the
// largest state it lets through is accepted by a broker whose topics take
// exactly kafka.maxRecordBytes, whatever the codec, and the dispatcher's
// records carry the headers the door counts. At start the dispatcher
// lowers the door to a topic's smaller max.message.bytes.
func TestDoorAgreesWithTheBroker(t *testing.T) {
	const limit = 20000
	for _, codec := range []string{"none", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			e := newEnv(t)
			brokers := kafkatest.NewLimited(t, limit, 1, stateTopic, noticeTopic)
			feed := e.feed(brokers, stateTopic, noticeTopic, fmt.Sprintf("  maxRecordBytes: %d\n  compression: %s", limit, codec))
			door, err := recsize.New(limit, codec)
			if err != nil {
				t.Fatal(err)
			}
			ev := store.OutboxEvent{ID: 1, Kind: store.KindState, Event: store.EventUpsert, FLID: 123456789012, StateVersion: 987654, OperationDay: day9}
			measure := func(n int) engine.RecordSize {
				ev.Payload = []byte(incompressible(n))
				rec, err := dispatch.Record(ev, dispatch.Topics{State: stateTopic, Notice: noticeTopic})
				if err != nil {
					t.Fatal(err)
				}
				var hs []engine.Header
				for _, h := range rec.Headers {
					hs = append(hs, engine.Header{Key: h.Key, Value: string(h.Value)})
				}
				if want := engine.RecordHeaders(ev.Event, ev.StateVersion, ev.OperationDay); !slices.Equal(hs, want) {
					t.Fatalf("dispatch sends headers %v, the door counts %v", hs, want)
				}
				return door.Of(rec.Key, rec.Value, hs)
			}
			// The largest payload the door lets through.
			n := limit
			for !door.Fits(measure(n)) {
				n--
			}
			if n < limit-200 {
				t.Fatalf("the door refuses %d bytes of payload already (limit %d): %+v", n+1, limit, measure(n+1))
			}
			cl, err := dispatch.NewClient(feed, fastClient()...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			for _, size := range []int{n, n + 64} {
				measure(size)
				rec, _ := dispatch.Record(ev, dispatch.Topics{State: stateTopic, Notice: noticeTopic})
				if err := cl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				var perr error
				done := make(chan struct{})
				cl.Produce(t.Context(), rec, func(_ *kgo.Record, err error) { perr = err; close(done) })
				_ = cl.Flush(t.Context()) // manual flushing, as the dispatcher's client
				<-done
				_ = cl.EndTransaction(t.Context(), kgo.TryAbort)
				switch {
				case size == n && perr != nil:
					t.Fatalf("a %d-byte payload passes the door (%+v) but Kafka refuses it: %v", size, measure(size), perr)
				case size > n && perr == nil && !door.Fits(measure(size)):
					t.Logf("a %d-byte payload the door refuses was accepted (the door errs on the safe side by %d bytes)", size, size-n)
				}
			}
		})
	}
	t.Run("topic accepts less", func(t *testing.T) {
		e := newEnv(t)
		c := cluster(t, kfake.SeedTopics(1, stateTopic, noticeTopic))
		kafkatest.SetTopicLimit(t, c.ListenAddrs(), limit, stateTopic)
		door, err := recsize.New(1<<20, "zstd")
		if err != nil {
			t.Fatal(err)
		}
		opts := fastRetry
		opts.Door = door
		d := e.dispatcher(e.feed(c.ListenAddrs(), stateTopic, noticeTopic, ""), opts, fastClient()...)
		run(t, d)
		eventually(t, "the door follows the topic's limit", func() bool { return door.Max() == limit && d.Status().TopicLimit == limit })
	})
}
