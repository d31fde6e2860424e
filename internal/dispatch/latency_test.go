package dispatch_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
)

// latencies records what the dispatcher observes.
type latencies struct {
	mu sync.Mutex
	s  []float64
}

func (l *latencies) Observe(v float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s = append(l.s, v)
}

// Each delivered record is observed once, with the seconds from its outbox
// event's commit to the acknowledgement: events committed a while before
// the dispatcher runs are observed at least that old.
func TestObservesDeliveryLatencyOfEveryDeliveredRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	for i := range 3 {
		e.flop(4712, "ESTT", fmt.Sprintf("09SEP26%04d", 900+i))
	}
	const waited = 300 * time.Millisecond
	time.Sleep(waited)
	var l latencies
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{DeliveryLatency: &l})
	n, err := d.DeliverOnce(t.Context())
	if err != nil || n != 4 {
		t.Fatalf("DeliverOnce = %d, %v; want 4 records (1 state, 3 notices)", n, err)
	}
	if len(l.s) != 4 {
		t.Fatalf("%d latencies observed for 4 delivered records: %v", len(l.s), l.s)
	}
	for _, v := range l.s {
		if v < waited.Seconds() || v > 60 {
			t.Errorf("latency %.3fs, want at least the %s the events waited before the dispatcher ran", v, waited)
		}
	}
	// Nothing left: another pass delivers and observes nothing.
	if n, err := d.DeliverOnce(t.Context()); err != nil || n != 0 || len(l.s) != 4 {
		t.Fatalf("second DeliverOnce = %d, %v with %d latencies; want nothing more", n, err, len(l.s))
	}
}
