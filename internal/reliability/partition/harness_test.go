//go:build reliability

package partition_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// waitLong bounds every wait without a tighter bound of its own. Waits
// are polls with deadlines, never assertions on how long something took.
const waitLong = 2 * time.Minute

const poll = 25 * time.Millisecond

// messages is the size of the day each scenario runs.
const messages = 600

// ---- the workload and its reference --------------------------------------------

var (
	loadOnce sync.Once
	rows     []string
	base     time.Time
	want     check.Expected

	refOnce sync.Once
	ref     check.Outcome
	refErr  error
)

func workload(t *testing.T) ([]string, time.Time) {
	t.Helper()
	loadOnce.Do(func() {
		day, loc := check.Today(t)
		rows, base = check.Day(day, loc, messages), time.Now().UTC().Truncate(time.Second)
		want = check.ExpectDay(day, loc, messages)
	})
	return rows, base
}

// reference is one clean `pump --drain` of the workload, read into memory
// once for the package (check.CleanRun).
func reference(t *testing.T) check.Outcome {
	t.Helper()
	refOnce.Do(func() {
		rows, base := workload(t)
		ref, refErr = check.CleanRun(t, shared.Binary, rows, base, want)
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	return ref
}

// ---- the feed's database: migrate, audit ----------------------------------------

// feed is one scenario's world (check.NewWorld) with its database
// migrated and the write audit installed (proctest.World.InstallAudit).
type feed struct {
	*check.World
	t *testing.T
}

func newFeed(t *testing.T, name string) *feed {
	t.Helper()
	f := &feed{World: check.NewWorld(t, name, shared.Binary, check.WorldOptions{}), t: t}
	f.Migrate()
	f.InstallAudit()
	return f
}

// lock reads pipeline_lock.
func (f *feed) lock() (holder string, epoch int64) {
	f.t.Helper()
	holder, epoch, err := f.Lock(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return holder, epoch
}

// waitSettled waits until every row is processed and written back and
// every event delivered, while a pump keeps running.
func (f *feed) waitSettled() {
	f.t.Helper()
	await.EventuallyEvery(f.t, f.Name+": every row processed and every event delivered", waitLong, poll, func() (bool, string) {
		processed := f.Processed()
		pending := f.Count(`SELECT count(*) FROM msg_event WHERE id > (SELECT delivered_id FROM msg_event_cursor)`)
		backfill := f.Count(`SELECT count(*) FROM backfill_todo`)
		return processed == messages && pending == 0 && backfill == 0,
			fmt.Sprintf("%d processed, %d events pending, %d results not written back", processed, pending, backfill)
	})
}

// ---- processes -------------------------------------------------------------------

// start runs the binary with args as identity id (proctest.Spec.ID: the
// audit's application_name).
func start(t *testing.T, id string, env []string, args ...string) *proctest.Proc {
	t.Helper()
	return proctest.Start(t, shared.Binary, proctest.Spec{ID: id, Args: args, Env: env})
}

// ---- Kafka records with their producer ----------------------------------------------

// produced is one committed record and the producer epoch that wrote it.
type produced struct {
	Topic         string
	Partition     int32
	Offset        int64
	ProducerID    int64
	ProducerEpoch int16
}

// committedRecords reads every committed record of the topics
// (read_committed) with its producer: as many as dispatchtest.Records
// finds on them (the topics are at rest when it is called).
func committedRecords(t *testing.T, brokers []string, topics ...string) []produced {
	t.Helper()
	want := 0
	for _, topic := range topics {
		want += len(dispatchtest.Records(t, brokers, topic))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []produced
	for len(out) < want {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read the topics: %d of %d records: %v", len(out), want, ctx.Err())
		}
		fetches.EachRecord(func(r *kgo.Record) {
			out = append(out, produced{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch})
		})
	}
	return out
}

// apiAddr is the API server's host:port.
func apiAddr(t *testing.T) string {
	t.Helper()
	host := shared.RestConfig.Host
	if !strings.Contains(host, "://") {
		return host
	}
	u, err := url.Parse(host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
