package pumppod_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the mailbox driver
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/store"
)

// testRunner stands in for the pump (which lands separately) behind the
// real seam: it talks to the real PostgreSQL, MariaDB and Kafka of the
// feed, proves every tick that its epoch is still current (a transaction
// of a superseded epoch fails with store.ErrFenced and the runner stops,
// as the pump does), and applies the snapshots a test hands it in fenced
// transactions, exactly as the pump would apply a RESP from the mailbox.
type testRunner struct {
	feed     *config.Feed
	identity string
	epoch    int64
	observer pump.Observer

	db    *store.Store
	mbox  *sql.DB
	kafka *kgo.Client

	// ctx is the context Run was given; cancelled when leadership ends.
	ctxMu sync.Mutex
	ctx   context.Context

	applies chan applyRequest
	done    chan struct{}

	mu      sync.Mutex
	status  feedrun.Status
	notices []pump.Notice
	// failWith makes Run fail at its next tick.
	failWith error
	closed   int
}

// applyRequest is work for the runner's next fenced transaction.
type applyRequest struct {
	fn   func(context.Context, *store.Tx) error
	errc chan error
}

// runnerRegistry is the RunnerFactory of the tests; it keeps every runner
// it built, in order.
type runnerRegistry struct {
	mu      sync.Mutex
	runners []*testRunner
	// failBuild makes the next builds fail.
	failBuild error
}

func (reg *runnerRegistry) factory(ctx context.Context, p pumppod.RunParams) (pumppod.FeedRunner, error) {
	feed, identity, epoch := p.Feed, p.Identity, p.Epoch
	reg.mu.Lock()
	failBuild := reg.failBuild
	reg.mu.Unlock()
	if failBuild != nil {
		return nil, failBuild
	}
	db, err := store.Open(ctx, feed.Secrets.DatabaseDSN, store.Options{Location: feed.Location})
	if err != nil {
		return nil, err
	}
	mbox, err := sql.Open("mysql", feed.Secrets.MailboxDSN)
	if err != nil {
		db.Close()
		return nil, err
	}
	kafka, err := kgo.NewClient(kgo.SeedBrokers(feed.Spec.Kafka.Brokers...), kgo.ClientID(feed.Spec.Kafka.ClientID))
	if err != nil {
		db.Close()
		_ = mbox.Close()
		return nil, err
	}
	r := &testRunner{
		feed: feed, identity: identity, epoch: epoch, observer: p.Observer,
		db: db, mbox: mbox, kafka: kafka,
		applies: make(chan applyRequest), done: make(chan struct{}),
		status: feedrun.Status{Status: pump.Status{Holder: identity, Epoch: epoch, Counts: map[string]int64{}}},
	}
	reg.mu.Lock()
	reg.runners = append(reg.runners, r)
	reg.mu.Unlock()
	return r, nil
}

// all returns the runners built so far.
func (reg *runnerRegistry) all() []*testRunner {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return append([]*testRunner(nil), reg.runners...)
}

func (reg *runnerRegistry) setFailBuild(err error) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.failBuild = err
}

// Run implements pumppod.FeedRunner.
func (r *testRunner) Run(ctx context.Context) error {
	r.ctxMu.Lock()
	r.ctx = ctx
	r.ctxMu.Unlock()
	defer close(r.done)
	defer r.update(func(s *feedrun.Status) { s.Running = false })
	r.update(func(s *feedrun.Status) { s.Running, s.Since = true, time.Now() })
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := r.tick(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case req := <-r.applies:
			req.errc <- r.apply(ctx, req)
		case <-tick.C:
		}
	}
}

// Status implements pumppod.FeedRunner.
func (r *testRunner) Status() feedrun.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	s.Counts = map[string]int64{}
	for k, v := range r.status.Counts {
		s.Counts[k] = v
	}
	return s
}

// DrainNotices implements pumppod.NoticeSource.
func (r *testRunner) DrainNotices() []pump.Notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.notices
	r.notices = nil
	return out
}

func (r *testRunner) update(fn func(*feedrun.Status)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.status)
}

// tick checks the epoch in a fenced transaction and refreshes the figures
// from the real services.
func (r *testRunner) tick(ctx context.Context) error {
	r.mu.Lock()
	failWith := r.failWith
	r.mu.Unlock()
	if failWith != nil {
		return failWith
	}
	tx, err := r.db.Begin(ctx, r.epoch)
	if err != nil {
		return err // store.ErrFenced once another pump took over
	}
	if err := tx.Rollback(ctx); err != nil {
		return err
	}
	// As the pump does (pump.EpochRenewInterval), only more often.
	if err := r.db.RenewEpoch(ctx, r.epoch); err != nil {
		return err
	}
	mboxErr := r.mbox.PingContext(ctx)
	var depth int64
	if mboxErr == nil {
		mboxErr = r.mbox.QueryRowContext(ctx, "SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NULL").Scan(&depth)
	}
	kafkaErr := r.kafka.Ping(ctx)
	ledger, ledgerErr := r.db.Ledger(ctx)
	r.update(func(s *feedrun.Status) {
		s.MailboxReachable, s.MailboxError = mboxErr == nil, errString(mboxErr)
		s.KafkaReachable, s.KafkaError = kafkaErr == nil, errString(kafkaErr)
		s.DatabaseReachable, s.DatabaseError = ledgerErr == nil, errString(ledgerErr)
		s.QueueDepth = depth
		for _, d := range ledger {
			s.LastProcessedID = max(s.LastProcessedID, d.LastMessageID)
		}
	})
	return nil
}

// apply runs one request in a fenced transaction, as the pump applies a
// message: a superseded epoch cannot commit.
func (r *testRunner) apply(ctx context.Context, req applyRequest) error {
	tx, err := r.db.Begin(ctx, r.epoch)
	if err != nil {
		return err
	}
	if err := req.fn(ctx, tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// Close releases the connections; the supervisor calls it once, after Run.
func (r *testRunner) Close() {
	r.mu.Lock()
	r.closed++
	r.mu.Unlock()
	r.kafka.Close()
	_ = r.mbox.Close()
	r.db.Close()
}

// closeCount is how often Close was called.
func (r *testRunner) closeCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// runContext is the context Run was given (nil before Run).
func (r *testRunner) runContext() context.Context {
	r.ctxMu.Lock()
	defer r.ctxMu.Unlock()
	return r.ctx
}

// stopped reports whether Run has returned.
func (r *testRunner) stopped() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// inTx hands fn to the running runner, which runs it in its next fenced
// transaction, and waits for the outcome.
func (r *testRunner) inTx(fn func(context.Context, *store.Tx) error) error {
	req := applyRequest{fn: fn, errc: make(chan error, 1)}
	select {
	case r.applies <- req:
	case <-r.done:
		return errors.New("the runner stopped before it could run the transaction")
	case <-time.After(30 * time.Second):
		return errors.New("the runner did not take the transaction within 30s")
	}
	return <-req.errc
}

// applySnapshot applies a full-day snapshot (a RESP answering the day's
// request) through the runner, and counts it as the pump's observer would.
func (r *testRunner) applySnapshot(t *testing.T, meta store.Meta, snap store.Snapshot) {
	t.Helper()
	start := time.Now()
	err := r.inTx(func(ctx context.Context, tx *store.Tx) error {
		_, err := tx.ApplySnapshot(ctx, meta, snap)
		return err
	})
	if err != nil {
		t.Fatalf("apply snapshot of %s: %v", snap.Day, err)
	}
	r.observer.MessageDone(meta.Type, meta.Styp, store.StatusSucceeded)
	r.observer.BatchCommitted(1, time.Since(start))
	r.update(func(s *feedrun.Status) {
		s.Counts[store.StatusSucceeded]++
		s.LastProcessedID = max(s.LastProcessedID, meta.MessageID)
	})
}

func (r *testRunner) setStatus(fn func(*feedrun.Status)) { r.update(fn) }

func (r *testRunner) addNotice(n pump.Notice) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notices = append(r.notices, n)
}

func (r *testRunner) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failWith = err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var errInjected = errors.New("injected failure")

func describe(r *testRunner) string {
	if r == nil {
		return "<no runner>"
	}
	return fmt.Sprintf("runner of %s epoch %d", r.identity, r.epoch)
}

// The metrics observer handed to the factory plugs into the pump as is.
var _ pump.Observer = (*pumppod.FeedObserver)(nil)
