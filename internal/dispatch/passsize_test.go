package dispatch_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
)

// A backlog goes in growing passes: after a pass whose window was full
// and wholly delivered, Run's next pass takes twice as many records (a
// full-day snapshot's 20,000 records in a few passes, not twenty); a
// pass that took everything brings the next burst back to BatchSize.
// DeliverOnce keeps BatchSize. Every record is delivered once, in order.
func TestBacklogPassesGrowAndShrinkBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := kafkatest.New(t, stateTopic, noticeTopic)
	fc := testingclock.NewFakeClock(time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC))
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{Clock: fc, ScanInterval: time.Hour, BatchSize: 4})
	var mu sync.Mutex
	var passes []int
	dispatch.SetBeforeProduce(d, func(_ context.Context, events []store.OutboxEvent) {
		mu.Lock()
		defer mu.Unlock()
		passes = append(passes, len(events))
	})
	sizes := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(passes)
	}
	// 20 FLOPs of 20 flights: 40 records (a notice and a state each).
	for i := range 20 {
		e.flop(flight.FLID(100+i), "ESTT", fmt.Sprintf("09SEP26%04d", 900+i))
	}
	stop := run(t, d)
	d.Notify()
	idle(t, d)
	if got, want := sizes(), []int{4, 8, 16, 12}; !slices.Equal(got, want) {
		t.Fatalf("passes of %v records, want %v (each twice the one before while the window is full)", got, want)
	}

	// The next burst starts again at BatchSize.
	for i := range 3 {
		e.flop(flight.FLID(200+i), "ESTT", fmt.Sprintf("09SEP26%04d", 1000+i))
	}
	d.Notify()
	idle(t, d)
	stop()
	if got, want := sizes()[4:], []int{4, 2}; !slices.Equal(got, want) {
		t.Fatalf("the next burst went in passes of %v records, want %v", got, want)
	}
	dispatchtest.AssertVersionsRise(t, dispatchtest.Records(t, brokers, stateTopic))
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export())
	if !e.noticesOnTopic(t, brokers) {
		t.Fatal("the notice topic does not hold every notice exactly once")
	}
}
