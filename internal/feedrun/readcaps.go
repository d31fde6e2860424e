package feedrun

import (
	"math"
	"runtime/debug"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/store"
)

// Read caps from the memory limit. Every connection of
// a feed's database pool and mailbox pool may hold one server answer of up
// to its bound (store.MessageBound, mailbox.ConnReadBound: about
// mailbox.maxMessageBytes each) before the bound refuses more; with the
// defaults that is 4 × 41 MiB + 4 × 42 MiB. A pod whose memory limit is
// smaller than the sum can be made to die of OOM by its own servers (or
// anything answering at their address). FitReadCaps derives the caps from
// the process's memory limit instead: the connections together may hold
// readCapShare of it; when the configured sizes do not fit, the feed's
// maxMessageBytes and maxBatchBytes are lowered until they do, so a larger
// message is refused (DEAD, over capacity) rather than the pod killed.

// readCapShare is the part of the Go memory limit (GOMEMLIMIT, which the
// CLI sets to 85% of the container's cgroup limit unless GOMEMLIMIT is
// given) that the connections' read buffers may take at once; the rest is
// the pump's heap (batches being decoded and applied, the Kafka client).
// 4/5 keeps the defaults (40 MiB messages, 4 + 4 connections) in a 512 MiB
// container.
const readCapShare = 0.8

// minReadCapMessage is the smallest maxMessageBytes FitReadCaps lowers
// to; a pod whose limit does not hold even that is left at it (and said
// so): its limit, not the feed, is the mistake.
const minReadCapMessage = 1 << 20

// ReadCaps is what FitReadCaps decided.
type ReadCaps struct {
	// Limit is the memory limit the caps come from (0: none known).
	Limit int64
	// Connections counts the database and mailbox connections sharing it.
	Connections int
	// MaxMessageBytes and MaxBatchBytes are the feed's, after the fit.
	MaxMessageBytes, MaxBatchBytes int64
	// StoreReadCap is the database connections' bound (store.Options).
	StoreReadCap int64
	// Sum is the connections' bounds added up, after the fit.
	Sum int64
	// Lowered: the configured sizes did not fit and were lowered.
	Lowered bool
	// TooSmall: the limit does not hold minReadCapMessage a connection.
	TooSmall bool
}

// memoryLimit is the process's Go memory limit (math.MaxInt64: none).
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// FitReadCaps lowers feed's mailbox.maxMessageBytes and maxBatchBytes so
// that the read bounds of its database and mailbox connections add up to
// at most readCapShare of limit (a limit of 0 or math.MaxInt64 changes
// nothing). It changes feed in place and reports what it decided.
func FitReadCaps(feed *config.Feed, limit int64) ReadCaps {
	mb := &feed.Spec.Mailbox
	dbConns := int64(max(feed.Spec.Database.MaxConns, 1))
	conns := dbConns + mailbox.MaxConns
	caps := ReadCaps{Connections: int(conns)}
	sum := func() int64 {
		return dbConns*store.MessageBound(mb.MaxMessageBytes) + mailbox.MaxConns*mailbox.ConnReadBound(*mb)
	}
	if limit <= 0 || limit == math.MaxInt64 {
		caps.MaxMessageBytes, caps.MaxBatchBytes, caps.Sum = mb.MaxMessageBytes, mb.MaxBatchBytes, sum()
		return caps
	}
	caps.Limit = limit
	budget := int64(float64(limit) * readCapShare)
	if sum() > budget {
		caps.Lowered = true
		per := budget / conns
		// A mailbox answer is at most its bytes and 1/64 more, its rows'
		// overhead and BoundMargin (mailbox.newBound); a database message
		// its body and MessageMargin.
		rows := int64(max(mb.BatchSize, 1))
		msg := min((per-2*rows*256-mailbox.BoundMargin)*64/65, per-store.MessageMargin)
		if msg < minReadCapMessage {
			msg, caps.TooSmall = minReadCapMessage, true
		}
		mb.MaxMessageBytes = min(mb.MaxMessageBytes, msg)
		mb.MaxBatchBytes = min(mb.MaxBatchBytes, mb.MaxMessageBytes)
		caps.StoreReadCap = mb.MaxMessageBytes + store.MessageMargin
	}
	caps.MaxMessageBytes, caps.MaxBatchBytes = mb.MaxMessageBytes, mb.MaxBatchBytes
	caps.Sum = sum()
	if caps.StoreReadCap > 0 {
		caps.Sum = dbConns*min(store.MessageBound(mb.MaxMessageBytes), caps.StoreReadCap) + mailbox.MaxConns*mailbox.ConnReadBound(*mb)
	}
	return caps
}

// withReadCaps is feed, copied, fitted to the process's memory limit.
func withReadCaps(feed *config.Feed) (*config.Feed, ReadCaps) {
	f := *feed
	caps := FitReadCaps(&f, memoryLimit())
	return &f, caps
}
