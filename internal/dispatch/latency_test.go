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
// the dispatcher runs are observed at least that old. The receipt latency
// counts from the message's DATE_RECEIVED (its processing row): observed
// for the records whose message has one, at least as old as that receipt.
func TestObservesDeliveryLatencyOfEveryDeliveredRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	for i := range 3 {
		e.flop(4712, "ESTT", fmt.Sprintf("09SEP26%04d", 900+i))
	}
	// Messages 1 and 2 were received an hour and two hours ago; message 3
	// has no processing row (its receipt is unknown).
	for id, ago := range map[int64]time.Duration{1: time.Hour, 2: 2 * time.Hour} {
		if _, err := e.conn.Exec(t.Context(), `INSERT INTO proc_state (message_id, status, received_at, finished_at)
			VALUES ($1, 'SUCCEEDED', now() - $2::interval, now())`, id, fmt.Sprintf("%d seconds", int(ago.Seconds()))); err != nil {
			t.Fatal(err)
		}
	}
	const waited = 300 * time.Millisecond
	time.Sleep(waited)
	var l, r latencies
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{DeliveryLatency: &l, ReceiptLatency: &r})
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
	// The notices of messages 1 and 2; the state record is message 3's
	// (the flight's newest) and the notice of 3 has no receipt.
	if len(r.s) != 2 {
		t.Fatalf("%d receipt latencies observed, want 2 (the records of the two messages with a receipt): %v", len(r.s), r.s)
	}
	for _, v := range r.s {
		if v < time.Hour.Seconds() || v > (2*time.Hour+time.Minute).Seconds() {
			t.Errorf("receipt latency %.0fs, want between the hour and the two hours since the messages' receipt", v)
		}
	}
	// Nothing left: another pass delivers and observes nothing.
	if n, err := d.DeliverOnce(t.Context()); err != nil || n != 0 || len(l.s) != 4 {
		t.Fatalf("second DeliverOnce = %d, %v with %d latencies; want nothing more", n, err, len(l.s))
	}
}
