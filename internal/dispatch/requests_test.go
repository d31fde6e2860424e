package dispatch_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// A pass costs the broker as few requests as a Kafka transaction allows:
// one Produce for all its records (manual flushing: nothing goes before
// the flush) and one EndTxn, plus one AddPartitionsToTxn on brokers
// without transaction version 2 (before Kafka 4.0). At a steady rate
// every message is a pass of its own, so a producer setting that split a
// pass's records over several requests (a linger, a small batch bound)
// would multiply the broker's and the pump's work per message.
func TestAPassIsOneProduceAndOneEndTxn(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		opts []kgo.Opt
		want map[int16]int
	}{
		"transaction version 2": {want: map[int16]int{int16(kmsg.Produce): 1, int16(kmsg.EndTxn): 1}},
		"Kafka 3.9": {opts: []kgo.Opt{kgo.MaxVersions(kversion.V3_9_0())},
			want: map[int16]int{int16(kmsg.AddPartitionsToTxn): 1, int16(kmsg.Produce): 1, int16(kmsg.EndTxn): 1}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cl := cluster(t, kfake.SeedTopics(3, stateTopic, noticeTopic))
			var mu sync.Mutex
			counts := map[int16]int{}
			cl.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
				cl.KeepControl()
				mu.Lock()
				defer mu.Unlock()
				counts[req.Key()]++
				return nil, nil, false
			})
			taken := func() map[int16]int {
				mu.Lock()
				defer mu.Unlock()
				out := maps.Clone(counts)
				clear(counts)
				return out
			}
			d := e.dispatcher(e.feed(cl.ListenAddrs(), stateTopic, noticeTopic, ""), fastRetry, c.opts...)
			// The first pass also initialises the producer and reads metadata.
			e.flop(flight.FLID(1), "ESTT", "09SEP260900")
			deliverAll(t, d)
			taken()
			const passes = 5
			for i := range passes {
				e.flop(flight.FLID(100+i), "ESTT", fmt.Sprintf("09SEP26%04d", 900+i))
				if n, err := d.DeliverOnce(context.Background()); err != nil || n != 2 {
					t.Fatalf("pass %d: %d records delivered (%v), want a state and a notice", i, n, err)
				}
			}
			// A backlog's pass of many records over every partition of both
			// topics is no more requests.
			for i := range 200 {
				e.flop(flight.FLID(1000+i), "ESTT", fmt.Sprintf("09SEP26%04d", 1000+i%1000))
			}
			if n, err := d.DeliverOnce(context.Background()); err != nil || n < 100 {
				t.Fatalf("backlog pass: %d records delivered (%v)", n, err)
			}
			got := taken()
			for key, per := range c.want {
				if got[key] != (passes+1)*per {
					t.Errorf("%s: %d requests in %d passes, want %d a pass", kmsg.NameForKey(key), got[key], passes+1, per)
				}
				delete(got, key)
			}
			for key, n := range got {
				t.Errorf("%d %s requests in %d passes, want none", n, kmsg.NameForKey(key), passes+1)
			}
		})
	}
}
