// Package rebuild runs `flightfeed verify`: it rebuilds one operation day
// from the archived raw messages with the pump's own code, on the pump's
// ports, and compares it with what the feed serves (package verify says
// how, and why the request history is the live one). The pump runs on an
// Inbox that serves the archive (archiveInbox) and on the real PostgreSQL
// store in a scratch schema of the feed's database, created for the run,
// migrated there and dropped afterwards; the live tables are read through
// a read-only connection only. The rebuild sends no request and writes to
// no mailbox (the Inbox refuses), publishes nothing (no dispatcher) and
// runs no lifecycle job.
package rebuild

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pump/pgstore"
	"github.com/flightfeed/flightfeed/internal/recsize"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/verify"
)

// Options say which day of which feed to verify.
type Options struct {
	Feed *config.Feed
	// Live is the feed's database, opened read-only; the caller closes it.
	Live *store.Store
	// DSN is the database's writer DSN: the scratch schema is made, used
	// and dropped with it. Conn are its connection options (TLS).
	DSN  string
	Conn []store.ConnOption
	Day  string
	Log  logr.Logger
	// RanBy names who asks (verify.Record.RanBy).
	RanBy string
	// Clock reads the wall clock for the record (time.Now when nil).
	Clock func() time.Time
}

// Day verifies opts.Day: one verification at a time per feed
// (store.LockVerification: store.ErrVerifyRunning while another runs), the
// day rebuilt and compared with the served day, and the outcome recorded
// as the day's last verification (store.RecordVerification), a day the
// archive cannot rebuild included. That day's error is a
// *verify.NotVerifiable; a verification that failed or was cancelled
// records nothing.
func Day(ctx context.Context, opts Options) (verify.Record, verify.Report, error) {
	now := opts.Clock
	if now == nil {
		now = time.Now
	}
	unlock, err := store.LockVerification(ctx, opts.DSN, opts.Conn...)
	if err != nil {
		return verify.Record{}, verify.Report{}, err
	}
	defer unlock()
	started := now()
	rep, err := rebuildDay(ctx, opts)
	var nv *verify.NotVerifiable
	if err != nil && !errors.As(err, &nv) {
		return verify.Record{}, rep, err
	}
	rec := verify.RecordOf(opts.Day, rep, nv)
	rec.StartedAt, rec.FinishedAt, rec.RanBy = started, now(), opts.RanBy
	if rerr := store.RecordVerification(ctx, opts.DSN, rec, opts.Conn...); rerr != nil {
		return rec, rep, errors.Join(err, rerr)
	}
	return rec, rep, err
}

// rebuildDay rebuilds opts.Day and compares it with the served day. A day
// the archive cannot rebuild is a *verify.NotVerifiable error.
func rebuildDay(ctx context.Context, opts Options) (verify.Report, error) {
	log := opts.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	log = log.WithValues("day", opts.Day)
	live := opts.Live
	processed, err := live.ProcessedMessages(ctx)
	if err != nil {
		return verify.Report{}, err
	}
	archive, err := live.ArchiveIndex(ctx)
	if err != nil {
		return verify.Report{}, err
	}
	touches, err := live.DayTouches(ctx, opts.Day)
	if err != nil {
		return verify.Report{}, err
	}
	order, err := verify.Coverage(opts.Day, archive, processed, touches)
	if err != nil {
		return verify.Report{}, err
	}
	reqs, err := live.RequestLog(ctx)
	if err != nil {
		return verify.Report{}, err
	}
	served, err := live.ReadFlights(ctx, store.Filter{Day: opts.Day})
	if err != nil {
		return verify.Report{}, err
	}
	servedLedger, err := live.DayLedger(ctx, opts.Day)
	if err != nil {
		return verify.Report{}, err
	}

	finishedAt := make(map[int64]time.Time, len(processed))
	servedResults := make(map[int64]verify.Result, len(processed))
	for _, p := range processed {
		finishedAt[p.ID] = p.Finished
		servedResults[p.ID] = verify.Result{ID: p.ID, Status: p.Status, Reason: p.Reason}
	}

	schema, err := scratchName()
	if err != nil {
		return verify.Report{}, err
	}
	if err := store.CreateScratchSchema(ctx, opts.DSN, schema, opts.Conn...); err != nil {
		return verify.Report{}, err
	}
	defer func() {
		// Dropped even when ctx ended (a cancelled verify): a fresh
		// context on purpose, bounded.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := store.DropScratchSchema(dctx, opts.DSN, schema, opts.Conn...); err != nil {
			log.Error(err, "drop the scratch schema", "schema", schema)
		}
	}()
	conn := append(slices.Clip(opts.Conn), store.WithSearchPath(schema))
	if _, err := store.Migrate(ctx, opts.DSN, conn...); err != nil {
		return verify.Report{}, fmt.Errorf("migrate the scratch schema %s: %w", schema, err)
	}
	cur := &cursor{}
	clk := replayClock{cur: cur}
	scratch, err := store.Open(ctx, opts.DSN, store.Options{Location: opts.Feed.Location, Clock: clk, MaxConns: 2, Conn: conn,
		MaxMessageBytes: opts.Feed.Spec.Mailbox.MaxMessageBytes})
	if err != nil {
		return verify.Report{}, fmt.Errorf("open the scratch schema %s: %w", schema, err)
	}
	defer scratch.Close()

	door, err := recsize.New(int(opts.Feed.Spec.Kafka.MaxRecordBytes), opts.Feed.Spec.Kafka.Compression)
	if err != nil {
		return verify.Report{}, err
	}
	inbox := &archiveInbox{live: live, order: order, finished: finishedAt, cur: cur, done: map[int64]bool{}}
	st := rebuildStore{Store: pgstore.New(scratch), log: verify.NewRequestLog(reqs, order), cur: cur}
	p, err := pump.New(ctx, pump.Options{Feed: replayFeed(opts.Feed), Store: st, Inbox: inbox, Door: door,
		Identity: "verify-" + schema, Clock: clk, Log: log.WithName("rebuild")})
	if err != nil {
		return verify.Report{}, fmt.Errorf("start the rebuild: %w", err)
	}
	log.Info("rebuilding", "messages", len(order), "schema", schema)
	if err := p.Drain(ctx, nil); err != nil {
		return verify.Report{}, fmt.Errorf("rebuild %s: %w", opts.Day, err)
	}
	if ctx.Err() != nil {
		return verify.Report{}, fmt.Errorf("rebuild %s: %w", opts.Day, context.Cause(ctx))
	}

	rebuilt, err := scratch.ReadFlights(ctx, store.Filter{Day: opts.Day})
	if err != nil {
		return verify.Report{}, err
	}
	rebuiltLedger, err := scratch.DayLedger(ctx, opts.Day)
	if err != nil {
		return verify.Report{}, err
	}
	states, err := scratch.ProcessedMessages(ctx)
	if err != nil {
		return verify.Report{}, err
	}
	rebuiltResults := make(map[int64]verify.Result, len(states))
	for _, s := range states {
		rebuiltResults[s.ID] = verify.Result{ID: s.ID, Status: s.Status, Reason: s.Reason}
	}
	return verify.Compare(opts.Day, served, rebuilt, servedLedger, rebuiltLedger, order, servedResults, rebuiltResults), nil
}

// replayFeed is the feed as the rebuild runs it: one message a
// transaction (the request log answers per message), no request, no
// lifecycle job.
func replayFeed(feed *config.Feed) pump.Feed {
	f := feedrun.PumpFeed(feed)
	f.Spec.Mailbox.BatchSize = 1
	f.Spec.Requests.Disabled = true
	f.ReferenceTypes = nil
	f.Spec.History.Disabled = true
	f.Spec.Retention.NullDayDays = nil
	zero := int32(0)
	f.Spec.Retention.LedgerDays = &zero
	return f
}

func scratchName() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("name the scratch schema: %w", err)
	}
	return "flightfeed_verify_" + hex.EncodeToString(b), nil
}

// errNoSend is the Inbox's answer to a request or a write-back the
// rebuild must never make.
var errNoSend = errors.New("a rebuild sends no request to the mailbox")

// Verify verifies day of feed (Day) as a pump pod does for the read API:
// the live tables read through a read-only connection of the feed's read
// role (its writer's when it has none), the scratch schema made with the
// writer's DSN, ranBy recorded as who asked.
func Verify(ctx context.Context, feed *config.Feed, day, ranBy string, log logr.Logger) (verify.Record, verify.Report, error) {
	dbTLS, err := feed.DatabaseTLS()
	if err != nil {
		return verify.Record{}, verify.Report{}, err
	}
	dsn := feed.Secrets.DatabaseDSN
	if feed.Secrets.ReadDatabaseDSN != "" {
		dsn = feed.Secrets.ReadDatabaseDSN
	}
	live, err := store.Open(ctx, dsn, store.Options{MaxConns: 2, Location: feed.Location, ReadOnly: true, TLS: dbTLS})
	if err != nil {
		return verify.Record{}, verify.Report{}, fmt.Errorf("open the feed's database to verify %s: %w", day, err)
	}
	defer live.Close()
	return Day(ctx, Options{Feed: feed, Live: live, DSN: feed.Secrets.DatabaseDSN, Conn: []store.ConnOption{store.WithTLS(dbTLS)},
		Day: day, Log: log, RanBy: ranBy})
}
