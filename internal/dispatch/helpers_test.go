package dispatch_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

const (
	stateTopic  = "KAFKA_SCHD"
	noticeTopic = "KAFKA_MSG"
	day9        = "2026-09-09"
	// deadline bounds every wait for eventual delivery.
	deadline = 90 * time.Second
)

var shanghai = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

// env is one feed's database, written through the real store, and its
// Kafka configuration.
type env struct {
	t     *testing.T
	dsn   string
	store *store.Store
	conn  *pgx.Conn
	epoch int64

	mu    sync.Mutex
	msgID int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := storetest.New(t, store.Options{Location: shanghai})
	return &env{t: t, dsn: db.DSN, store: db.Store, conn: db.Conn, epoch: db.Epoch}
}

// feed is a configuration as `flightfeed pump --config` reads it; extra is
// YAML added under kafka.
func (e *env) feed(brokers []string, state, notice, extra string) *config.Feed {
	e.t.Helper()
	yaml := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: "root@tcp(127.0.0.1:3306)/unused"}
database: {dsn: %q}
kafka:
  brokers: [%s]
  topics: {state: %s, notice: %s}
%s`, e.dsn, strings.Join(brokers, ", "), state, notice, extra)
	feed, err := config.Parse([]byte(yaml))
	if err != nil {
		e.t.Fatalf("config: %v\n%s", err, yaml)
	}
	return feed
}

// dispatcher builds the client with NewClient (plus test opts) and the
// dispatcher, which renews its client the same way (as the feed runner
// does); the client in use closes when the test ends.
func (e *env) dispatcher(feed *config.Feed, opts dispatch.Options, kopts ...kgo.Opt) *dispatch.Dispatcher {
	e.t.Helper()
	cl, err := dispatch.NewClient(feed, kopts...)
	if err != nil {
		e.t.Fatal(err)
	}
	if opts.Epoch == 0 {
		opts.Epoch = e.epoch
	}
	if opts.Renew == nil {
		opts.Renew = func() (*kgo.Client, error) { return dispatch.NewClient(feed, kopts...) }
	}
	d, err := dispatch.New(e.store, cl, feed, opts)
	if err != nil {
		cl.Close()
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { d.Client().Close() })
	return d
}

func (e *env) nextMeta(typ, styp string) store.Meta {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.msgID++
	return store.Meta{MessageID: e.msgID, Type: typ, Styp: styp}
}

// inTx runs fn in one fenced transaction, as the pump does per batch.
func (e *env) inTx(fn func(tx *store.Tx) error) error {
	ctx := context.Background()
	tx, err := e.store.Begin(ctx, e.epoch)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// rec is a full-snapshot record of flid on day9 with FLNO, SODT and extra.
func rec(flid flight.FLID, flno string, extra ...flight.Command) store.SnapshotRecord {
	cmds := []flight.Command{{Tag: "FLNO", Op: flight.OpSet, Value: flno}, {Tag: "SODT", Op: flight.OpSet, Value: "09SEP260800"}}
	cmds = append(cmds, extra...)
	slices.SortFunc(cmds, func(a, b flight.Command) int { return flight.FieldOrder(a.Tag) - flight.FieldOrder(b.Tag) })
	return store.SnapshotRecord{Cmds: flight.Commands{FLID: flid, Full: true, Cmds: cmds}, Day: day9}
}

// snapshot applies a full-day snapshot of day9 (diff-deleting flights of
// the previous one that it lacks).
func (e *env) snapshot(records ...store.SnapshotRecord) store.SnapshotEffect {
	e.t.Helper()
	var out store.SnapshotEffect
	err := e.inTx(func(tx *store.Tx) error {
		var err error
		out, err = tx.ApplySnapshot(context.Background(), e.nextMeta("SCHD", "RESP"),
			store.Snapshot{FullDay: true, Day: day9, Records: records})
		return err
	})
	if err != nil {
		e.t.Fatalf("snapshot: %v", err)
	}
	return out
}

// flop sets one scalar of flid (creating the flight with a NULL day when
// unknown) and returns the new state_version.
func (e *env) flop(flid flight.FLID, tag, value string) int64 {
	e.t.Helper()
	v, err := e.tryFlop(flid, tag, value)
	if err != nil {
		e.t.Fatalf("FLOP %s of %s: %v", tag, flid, err)
	}
	return v
}

func (e *env) tryFlop(flid flight.FLID, tag, value string) (int64, error) {
	var out engine.IncrementEffect
	err := e.inTx(func(tx *store.Tx) error {
		var err error
		out, err = storetest.ApplyIncrement(context.Background(), tx, e.nextMeta("FLOP", tag),
			[]flight.Commands{{FLID: flid, Cmds: []flight.Command{{Tag: tag, Op: flight.OpSet, Value: value}}}})
		return err
	})
	return out.Versions[flid], err
}

// fdel deletes flights and returns their tombstone versions.
func (e *env) fdel(flids ...flight.FLID) map[flight.FLID]int64 {
	e.t.Helper()
	out, err := e.tryFdel(flids...)
	if err != nil {
		e.t.Fatalf("FDEL: %v", err)
	}
	return out
}

func (e *env) tryFdel(flids ...flight.FLID) (map[flight.FLID]int64, error) {
	var out engine.DeleteEffect
	err := e.inTx(func(tx *store.Tx) error {
		var err error
		out, err = storetest.DeleteFlights(context.Background(), tx, e.nextMeta("FLOP", "FDEL"), flids)
		return err
	})
	return out.Versions, err
}

// export is what `flightfeed export` prints: the canonical document of
// every flight, sorted by FLID, from one consistent read.
func (e *env) export() [][]byte {
	e.t.Helper()
	states, err := e.store.ReadFlights(context.Background(), store.Filter{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([][]byte, len(states))
	for i, s := range states {
		if out[i], err = flight.CanonicalJSON(s); err != nil {
			e.t.Fatal(err)
		}
	}
	return out
}

// pending is the SQL condition of an outbox row not done: above the
// dispatcher's cursor and not parked (the rows the old status column said
// PENDING).
const pending = `id > (SELECT delivered_id FROM msg_event_cursor) AND (id, kind) NOT IN (SELECT event_id, kind FROM msg_event_parked)`

// noticesOnTopic reports whether every committed notice is on the notice
// topic exactly once (a notice delivered ahead of a failing record at the
// cursor is not sent again).
func (e *env) noticesOnTopic(t *testing.T, brokers []string, opts ...kgo.Opt) bool {
	t.Helper()
	return int64(len(dispatchtest.Records(t, brokers, noticeTopic, opts...))) == e.count(`SELECT count(*) FROM msg_event_record WHERE kind = 'KAFKA_MSG'`)
}

func (e *env) count(sql string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// payloads returns the committed payloads of one outbox kind, by id.
func (e *env) payloads(kind string) []string {
	e.t.Helper()
	rows, err := e.conn.Query(context.Background(), `SELECT payload FROM msg_event_record WHERE kind = $1 ORDER BY id`, kind)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// eventually polls cond every 20 ms until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	await.EventuallyEvery(t, what, deadline, 20*time.Millisecond, func() (bool, string) { return cond(), "" })
}

// idle waits until no outbox event is pending.
func idle(t *testing.T, d *dispatch.Dispatcher) {
	t.Helper()
	eventually(t, "outbox delivered", func() bool {
		ok, err := d.Idle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
}

// deliverAll runs passes until the outbox is empty.
func deliverAll(t *testing.T, d *dispatch.Dispatcher) int {
	t.Helper()
	total := 0
	eventually(t, "outbox delivered by DeliverOnce", func() bool {
		n, err := d.DeliverOnce(context.Background())
		if err != nil {
			t.Fatalf("DeliverOnce: %v", err)
		}
		total += n
		ok, err := d.Idle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	return total
}

// run starts d.Run and stops it when the test ends, failing the test if
// Run does not return after its context ended.
func run(t *testing.T, d *dispatch.Dispatcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("Run returned %v", err)
				}
			case <-time.After(deadline):
				t.Errorf("Run did not return within %s after cancel", deadline)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// cluster starts a kfake broker and closes it when the test ends (closing
// twice is harmless).
func cluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}
