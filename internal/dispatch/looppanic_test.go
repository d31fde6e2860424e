package dispatch_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
)

// A panic in the goroutine that flushes a pass and records the broker's
// answers does not end the process nor hang the pass:
// it is counted with where="outbox-flush", the pass fails, and Run
// retries after its backoff. The transaction the panic left open is
// aborted before the next begins, so every notice reaches the topic
// exactly once and each flight's states in rising versions. Not parallel:
// the arming is the process's.
func TestOutboxFlushPanicIsRecovered(t *testing.T) {
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	var mu sync.Mutex
	var where []string
	opts := fastRetry
	opts.BatchSize = 4 // several passes
	opts.Panicked = func(w string) {
		mu.Lock()
		defer mu.Unlock()
		where = append(where, w)
	}
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), opts, fastClient()...)
	e.batch(estt(1, "09SEP260900"), estt(2, "09SEP260900"), estt(1, "09SEP260910"))
	e.batch(estt(3, "09SEP260900"), estt(2, "09SEP260910"), estt(1, "09SEP260920"))
	e.batch(estt(3, "09SEP260910"), estt(2, "09SEP260920"), estt(3, "09SEP260920"))

	defer failpoint.ArmPanic(failpoint.OutboxFlush, 2)()
	run(t, d)
	d.Notify()
	idle(t, d)

	mu.Lock()
	got := slices.Clone(where)
	mu.Unlock()
	if !slices.Equal(got, []string{dispatch.WhereOutboxFlush, dispatch.WhereOutboxFlush}) {
		t.Fatalf("panics counted %v, want outbox-flush twice", got)
	}
	if !e.noticesOnTopic(t, brokers) {
		t.Fatalf("notices on the topic: %d, want every committed one once (%d)",
			len(dispatchtest.Records(t, brokers, noticeTopic)), e.count(`SELECT count(*) FROM msg_event_record WHERE kind = 'KAFKA_MSG'`))
	}
	dispatchtest.AssertVersionsRise(t, dispatchtest.Records(t, brokers, stateTopic))
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
}
