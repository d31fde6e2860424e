package dispatch_test

import (
	"context"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// incompressible is n bytes of base64 text of random bytes (seeded): no
// codec shrinks it below three quarters.
func incompressible(n int) string {
	r := rand.New(rand.NewPCG(19, 19)) //nolint:gosec // test data
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
			c := cluster(t, kfake.SeedTopics(3, stateTopic, noticeTopic),
				kfake.BrokerConfigs(map[string]string{"message.max.bytes": "20000"}))
			brokers := c.ListenAddrs()
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
			if n := e.count(`SELECT count(*) FROM msg_event WHERE status = 'PARKED'`); n != 0 {
				t.Fatalf("%d events still parked after a newer state of the flight was delivered", n)
			}
			if n := e.count(`SELECT count(*) FROM msg_event WHERE flid = 2 AND state_version = $1 AND status = 'SUPERSEDED'`, bigV); n != 1 {
				t.Fatalf("the parked state v%d is not SUPERSEDED", bigV)
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
