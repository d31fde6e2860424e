package store

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// inFlight tracks the database calls in progress on a Store's pool (as a
// pgx tracer), so a caller can tell a database that stopped answering
// from one that is slow: a server that is stalled, or a network path that
// holds the connection open and carries nothing, answers no statement and
// closes nothing, and the server's statement_timeout cannot fire through
// it. Calls are statements, batches, COPYs and connects.
type inFlight struct {
	clock func() time.Time
	mu    sync.Mutex
	next  uint64
	calls map[uint64]inFlightCall
}

type inFlightCall struct {
	start time.Time
	what  string
}

type inFlightKey struct{}

func newInFlight(clock func() time.Time) *inFlight {
	return &inFlight{clock: clock, calls: map[uint64]inFlightCall{}}
}

func (f *inFlight) start(ctx context.Context, what string) context.Context {
	f.mu.Lock()
	f.next++
	id := f.next
	f.calls[id] = inFlightCall{start: f.clock(), what: what}
	f.mu.Unlock()
	return context.WithValue(ctx, inFlightKey{}, id)
}

func (f *inFlight) end(ctx context.Context) {
	id, ok := ctx.Value(inFlightKey{}).(uint64)
	if !ok {
		return
	}
	f.mu.Lock()
	delete(f.calls, id)
	f.mu.Unlock()
}

// oldest is the call in progress for the longest time (zero start when
// none).
func (f *inFlight) oldest() (since time.Time, what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if since.IsZero() || c.start.Before(since) {
			since, what = c.start, c.what
		}
	}
	return since, what
}

// statementName is what a log line shows of a statement: its first two
// words ("UPDATE flight_schd", "commit"), never its parameters.
func statementName(sql string) string {
	fields := strings.Fields(sql)
	if len(fields) > 2 {
		fields = fields[:2]
	}
	return strings.Join(fields, " ")
}

func (f *inFlight) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return f.start(ctx, statementName(data.SQL))
}

func (f *inFlight) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	f.end(ctx)
}

func (f *inFlight) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return f.start(ctx, "batch of statements")
}

func (f *inFlight) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (f *inFlight) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	f.end(ctx)
}

func (f *inFlight) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	return f.start(ctx, "COPY "+data.TableName.Sanitize())
}

func (f *inFlight) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromEndData) {
	f.end(ctx)
}

func (f *inFlight) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	return f.start(ctx, "connect")
}

func (f *inFlight) TraceConnectEnd(ctx context.Context, _ pgx.TraceConnectEndData) {
	f.end(ctx)
}

// Unanswered returns since when the oldest database call still in
// progress on this Store has been waiting, and what it is ("commit",
// "COPY \"msg_event\"", "batch of statements"); a zero time when no call
// is in progress. A caller compares it with its own patience: a long
// statement is not a stall, a commit waiting 15 s is.
func (s *Store) Unanswered() (since time.Time, what string) {
	if s.inFlight == nil {
		return time.Time{}, ""
	}
	return s.inFlight.oldest()
}
