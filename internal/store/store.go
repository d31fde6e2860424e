package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/utils/clock"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// LockName is the pipeline_lock row every write transaction locks first.
const LockName = "FLIGHT_SCHD_WRITER"

// ErrFenced means the caller's fencing epoch is no longer the current one:
// another pump took over, and this transaction must not commit.
var ErrFenced = pumpdata.ErrFenced

// ErrConflict means a snapshot's compare-and-set on the day's version lost;
// the message is retried from a fresh read.
var ErrConflict = pumpdata.ErrConflict

// ErrNotNew means a row written as new (ArchivedRow.New, Result.New)
// already existed: something outside the pump wrote or kept it. Nothing
// was written; the batch is to be retried with upserts.
var ErrNotNew = pumpdata.ErrNotNew

// ErrNotFound means a read asked for one row by its id and there is none
// (Replay): the store's own answer, so its callers (the read API) never
// look for the driver's.
var ErrNotFound = errors.New("not found")

// Options configure a Store.
type Options struct {
	// MaxConns bounds the pool (default 4).
	MaxConns int32
	// Location is the airport time zone, for the typed UTC columns.
	Location *time.Location
	// Clock stamps UPDATED_AT and ledger times (default: real clock).
	Clock clock.PassiveClock
	// Tracer observes every statement (tests count round trips with it).
	Tracer pgx.QueryTracer
	// IdleInTransactionTimeout ends a session that sits inside a
	// transaction doing nothing (default 30s): a pump frozen or cut off
	// mid-transaction must not hold pipeline_lock, or the next leader
	// could not take its epoch.
	IdleInTransactionTimeout time.Duration
	// ReadOnly opens every session with default_transaction_read_only = on
	// (whatever the DSN says): a write fails with SQLSTATE 25006. It guards
	// a reader that has only the writer's DSN against writing by mistake;
	// a read-only role is the real boundary.
	ReadOnly bool
	// SchemaVersion is the schema version the caller checked the database
	// at (PrepareSchema); Open only keeps it for SchemaVersion.
	SchemaVersion int64
	// TLS, when set (config.Feed.DatabaseTLS), is used for every
	// connection, verified, whatever the DSN's sslmode says (WithTLS).
	TLS *tls.Config
	// MaxMessageBytes is the feed's mailbox.maxMessageBytes: a connection
	// refuses a server message above MessageBound of it (0: the default's).
	MaxMessageBytes int64
	// ReadCap, when positive, lowers the bound of every connection's
	// server message to it: the share of the pod's memory limit a
	// connection may hold (feedrun.FitReadCaps).
	ReadCap int64
	// Conn are further connection options (WithSearchPath).
	Conn []ConnOption
}

// Store is the PostgreSQL state database of one feed.
type Store struct {
	pool   *pgxpool.Pool
	loc    *time.Location
	clock  clock.PassiveClock
	schema int64
	// inFlight tracks the calls in progress (Unanswered).
	inFlight *inFlight
	// windowBig: the last window read was not small, so the next is read
	// by the full statement at once (ReadWindow).
	windowBig atomic.Bool
}

// Open connects to the database; it does not migrate (see Migrate). Its
// errors quote the DSN redacted and never a credential (see dsnError).
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	// A URI that pgx would split at the wrong '@' is refused before pgx
	// sees it: it cannot connect, and pgx would name the password's tail
	// as the host.
	if err := config.CheckDatabaseDSN(dsn); err != nil {
		return nil, fmt.Errorf("parse database DSN %s: %w", config.RedactDSN(dsn), err)
	}
	cfg, err := parsePoolConfig(dsn)
	if err != nil {
		return nil, dsnError(dsn, "parse database DSN %s: %w", config.RedactDSN(dsn), parseReason(err))
	}
	applyTLS(&cfg.ConnConfig.Config, opts.TLS)
	for _, o := range opts.Conn {
		o(&cfg.ConnConfig.Config)
	}
	cfg.ConnConfig.BuildFrontend = boundFrontendCapped(opts.MaxMessageBytes, opts.ReadCap)
	cfg.MaxConns = opts.MaxConns
	idle := opts.IdleInTransactionTimeout
	if idle <= 0 {
		idle = 30 * time.Second
	}
	// A dead client is noticed by the server too (keepalives), so its
	// transaction and row locks do not outlive it by hours. JIT is off: the
	// pump's statements are short lookups whose estimates can still cross
	// jit_above_cost (the outbox figures over a 60,000-row outbox were
	// compiled for ~190 ms every second, for 0.2 ms of work, and the
	// latency of a steady stream rose from 23 ms to 190 ms at p99).
	for k, v := range map[string]string{
		"idle_in_transaction_session_timeout": fmt.Sprint(idle.Milliseconds()),
		"tcp_keepalives_idle":                 "30",
		"tcp_keepalives_interval":             "10",
		"tcp_keepalives_count":                "3",
		"jit":                                 "off",
	} {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	if opts.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	} else if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		// A writer's prepared statements keep their generic plan from the
		// first call. They are key and list lookups (state loads, writes
		// by unnest of parameter arrays, the outbox cursor) whose generic
		// plans probe the primary keys whatever the list's length, as
		// good at a batch of one as at a thousand rows, while their
		// custom plans assume each array's exact length: for many the
		// generic cost never fell below the custom one, so PostgreSQL
		// planned them again at every call (at a steady stream's
		// batches of one, most of their CPU), and at a thousand rows
		// some custom plans hashed a seq scan of the whole table
		// instead. Read-only sessions (the read API) keep the server's
		// default.
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	// Calls in progress are tracked with the wall clock: a stall is real
	// time, whatever clock the caller stamps rows with.
	calls := newInFlight(time.Now)
	cfg.ConnConfig.Tracer = calls
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = multitracer.New(calls, opts.Tracer)
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 4
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, dsnError(dsn, "open database pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, dsnError(dsn, "connect to database %s/%s: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Database, err)
	}
	s := &Store{pool: pool, loc: opts.Location, clock: opts.Clock, schema: opts.SchemaVersion, inFlight: calls}
	if s.loc == nil {
		s.loc = time.UTC
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	return s, nil
}

// Close releases the pool.
func (s *Store) Close() { s.pool.Close() }

// SchemaVersion is the schema version the store was opened at
// (Options.SchemaVersion; 0 when the opener did not say).
func (s *Store) SchemaVersion() int64 { return s.schema }

// ReadSchemaVersion reads the database's schema version now (goose's
// newest applied migration): a store kept open across pump restarts
// notices a schema that another release migrated meanwhile.
func (s *Store) ReadSchemaVersion(ctx context.Context) (int64, error) {
	var v *int64
	if err := s.pool.QueryRow(ctx, `SELECT max(version_id) FROM goose_db_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	if v == nil {
		return 0, nil
	}
	return *v, nil
}

// TakeEpoch makes holder the current writer: it bumps the fencing epoch and
// returns it. Every later transaction of an older epoch fails with
// ErrFenced, even if its pump still believes it leads.
func (s *Store) TakeEpoch(ctx context.Context, holder string) (int64, error) {
	var epoch int64
	err := s.pool.QueryRow(ctx,
		`UPDATE pipeline_lock SET epoch = epoch + 1, holder = $2, acquired_at = now(), renewed_at = now() WHERE name = $1 RETURNING epoch`,
		LockName, holder).Scan(&epoch)
	if err != nil {
		return 0, fmt.Errorf("take fencing epoch for %s: %w", holder, err)
	}
	return epoch, nil
}

// Tx is one fenced write transaction (or a savepoint inside one).
type Tx struct {
	tx    pgx.Tx
	store *Store
	now   time.Time
}

// Begin starts a write transaction: its first statement locks the pipeline
// row and checks that epoch is still current (processing rules R5.1 step 1).
func (s *Store) Begin(ctx context.Context, epoch int64) (*Tx, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	var current int64
	if err := tx.QueryRow(ctx, `SELECT epoch FROM pipeline_lock WHERE name = $1 FOR UPDATE`, LockName).Scan(&current); err != nil {
		_ = tx.Rollback(ctx)
		return nil, fmt.Errorf("lock pipeline: %w", err)
	}
	if current != epoch {
		_ = tx.Rollback(ctx)
		return nil, fmt.Errorf("%w (mine %d, current %d)", ErrFenced, epoch, current)
	}
	// PostgreSQL keeps microseconds: the time written is the time published.
	return &Tx{tx: tx, store: s, now: s.clock.Now().UTC().Truncate(time.Microsecond)}, nil
}

// RenewEpoch records that the holder of epoch is alive (pipeline_lock.
// renewed_at, the database's clock); ErrFenced when epoch is no longer the
// current one. It takes no lock a batch waits for longer than one update.
func (s *Store) RenewEpoch(ctx context.Context, epoch int64) error {
	tag, err := s.pool.Exec(ctx, `UPDATE pipeline_lock SET renewed_at = now() WHERE name = $1 AND epoch = $2`, LockName, epoch)
	if err != nil {
		return fmt.Errorf("renew fencing epoch %d: %w", epoch, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("renew fencing epoch: %w (mine %d)", ErrFenced, epoch)
	}
	return nil
}

// EpochHolder is who holds the fencing epoch.
type EpochHolder struct {
	Epoch  int64
	Holder string
	// AcquiredAt is when the epoch was taken; Silent is how long ago the
	// holder last renewed it (or took it), by the database's clock.
	AcquiredAt time.Time
	Silent     time.Duration
}

// CurrentHolder reads who holds the fencing epoch and how long it has been
// silent.
func (s *Store) CurrentHolder(ctx context.Context) (EpochHolder, error) {
	var h EpochHolder
	var acquired *time.Time
	var silentMicros int64
	err := s.pool.QueryRow(ctx, `SELECT epoch, coalesce(holder, ''), acquired_at,
			coalesce((extract(epoch FROM now() - coalesce(renewed_at, acquired_at)) * 1000000)::bigint, 0)
		FROM pipeline_lock WHERE name = $1`, LockName).Scan(&h.Epoch, &h.Holder, &acquired, &silentMicros)
	if err != nil {
		return EpochHolder{}, fmt.Errorf("read the fencing epoch's holder: %w", err)
	}
	if acquired != nil {
		h.AcquiredAt = *acquired
	}
	h.Silent = time.Duration(silentMicros) * time.Microsecond
	return h, nil
}

// HoldsEpoch reports whether epoch is still the current one in
// pipeline_lock, without locking it: no newer leader took the feed. A
// dispatcher whose producer the broker refused asks it to tell a newer
// leader from a transaction the broker aborted on its own.
func (s *Store) HoldsEpoch(ctx context.Context, epoch int64) (bool, error) {
	var current int64
	if err := s.pool.QueryRow(ctx, `SELECT epoch FROM pipeline_lock WHERE name = $1`, LockName).Scan(&current); err != nil {
		return false, fmt.Errorf("read the fencing epoch: %w", err)
	}
	return current == epoch, nil
}

// Savepoint starts a nested transaction: rolling it back undoes only what
// was done inside it (one message of a batch).
func (t *Tx) Savepoint(ctx context.Context) (*Tx, error) {
	sp, err := t.tx.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("savepoint: %w", err)
	}
	return &Tx{tx: sp, store: t.store, now: t.now}, nil
}

// Commit commits (or releases the savepoint).
func (t *Tx) Commit(ctx context.Context) error {
	if err := t.tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Rollback undoes the transaction (or rolls back to the savepoint). Safe to
// call after Commit.
func (t *Tx) Rollback(ctx context.Context) error {
	if err := t.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("rollback: %w", err)
	}
	return nil
}

// takeVersionsSQL takes $1 values of the state_version sequence, ascending.
const takeVersionsSQL = `SELECT nextval('state_version_seq') FROM generate_series(1, $1) ORDER BY 1`

// nextVersions takes n values of the state_version sequence, ascending.
func (t *Tx) nextVersions(ctx context.Context, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	rows, err := t.tx.Query(ctx, takeVersionsSQL, n)
	if err != nil {
		return nil, fmt.Errorf("take %d state versions: %w", n, err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("take %d state versions: %w", n, err)
	}
	return versions, nil
}

// copyFrom runs sql, a COPY … FROM STDIN, with the data r holds, on the
// connection itself: the rows are encoded already, so pgx's CopyFrom has
// nothing to do. The connection's tracer (Unanswered, the tests' counters)
// is told of it as of pgx's.
func (t *Tx) copyFrom(ctx context.Context, r io.Reader, sql string) (tag pgconn.CommandTag, err error) {
	conn := t.tx.Conn()
	if tr, ok := conn.Config().Tracer.(pgx.CopyFromTracer); ok {
		var table pgx.Identifier
		if f := strings.Fields(sql); len(f) > 1 {
			table = pgx.Identifier{f[1]}
		}
		ctx = tr.TraceCopyFromStart(ctx, conn, pgx.TraceCopyFromStartData{TableName: table})
		defer func() { tr.TraceCopyFromEnd(ctx, conn, pgx.TraceCopyFromEndData{CommandTag: tag, Err: err}) }()
	}
	return conn.PgConn().CopyFrom(ctx, r, sql)
}

// sendBatch runs b and checks every statement's result.
func (t *Tx) sendBatch(ctx context.Context, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return readBatch(t.tx.SendBatch(ctx, b), b)
}

// readBatch checks the results of b, sent as br, and closes it. A
// statement queued with a callback (QueuedQuery.Exec) is read by it, so it
// can check its command tag.
func readBatch(br pgx.BatchResults, b *pgx.Batch) error {
	n := b.Len()
	for i := range n {
		var err error
		if fn := b.QueuedQueries[i].Fn; fn != nil {
			err = fn(br)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			_ = br.Close()
			return fmt.Errorf("statement %d of %d: %w", i+1, n, err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("close batch: %w", err)
	}
	return nil
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }
