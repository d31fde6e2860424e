package pump

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
	"unicode"

	"github.com/flightfeed/flightfeed/internal/panics"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// A panic while one message is decoded or applied is a bug of FlightFeed,
// not a fault of the feed: that message alone becomes DEAD (INTERNAL) and
// everything else goes on as if it had been refused. The stack goes to the
// log, never to the mailbox's note.

// maxPanicValueBytes bounds the panic value quoted in the mailbox note.
const maxPanicValueBytes = 200

// panicError is a panic recovered while one message was decoded or
// applied (stage "decoding", "applying").
type panicError struct {
	stage string
	value any
	stack []byte
}

func (e *panicError) Error() string {
	return "panic while " + e.stage + ": " + panicText(e.value)
}

// recovered turns a recovered panic value into a panicError and logs it
// with its stack (a chunk worker's own stack when the decoder raised one
// of its workers' panics again).
func (p *Pump) recovered(id int64, stage string, r any) *panicError {
	e := &panicError{stage: stage, value: r, stack: debug.Stack()}
	if wp, ok := r.(*sis.WorkerPanic); ok {
		e.value, e.stack = wp.Value, wp.Stack
	}
	p.log.Error(e, "panic while processing one message: it is made DEAD ("+ReasonInternal+"), the pump goes on",
		"msg_id", id, "stage", stage, "stack", string(e.stack))
	return e
}

// panicText is a panic value on one short line: control characters become
// spaces, and it is cut at maxPanicValueBytes on a rune boundary.
func panicText(v any) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, fmt.Sprint(v))
	if len(s) <= maxPanicValueBytes {
		return s
	}
	cut := maxPanicValueBytes
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// decodeOne decodes one row; a panic of the decoder becomes the row's
// decoding error (DEAD, INTERNAL).
func (p *Pump) decodeOne(row pumpdata.Row, opts sis.Options) (msg *sis.Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, p.recovered(row.ID, "decoding", r)
		}
	}()
	if p.hooks.decode != nil {
		p.hooks.decode(row.ID)
	}
	return sis.DecodeString(bodyText(row.Body), opts)
}

// processGuarded is processOne with a panic recovered as a *panicError.
func (p *Pump) processGuarded(ctx context.Context, run *batchRun, it item, prior pumpdata.ProcState) (o outcome, w *waiting, err error) {
	defer func() {
		if r := recover(); r != nil {
			o, w, err = outcome{}, nil, p.recovered(it.row.ID, "applying", r)
		}
	}()
	return p.processOne(ctx, run, it, prior)
}

// panicKey names a mailbox row: its id and receipt, as a reused id is
// another message.
type panicKey struct {
	id       int64
	received time.Time
}

func keyOf(row pumpdata.Row) panicKey { return panicKey{row.ID, row.Received} }

// applyPanicked handles a panic while a message of the batch was applied:
// the batch is rolled back whole (the caller's deferred Rollback), so the
// message leaves no partial effect, and it is run again at once with that
// message DEAD (INTERNAL) without applying it (processOne reads
// p.panicked); the other messages commit normally.
func (p *Pump) applyPanicked(ctx context.Context, row pumpdata.Row, attempted []outcome, e *panicError) batchOutcome {
	if p.panicked == nil {
		p.panicked = map[panicKey]string{}
	}
	p.panicked[keyOf(row)] = e.Error()
	p.writeTraces(ctx, attempted, pumpdata.TraceRolledBack)
	return batchOutcome{blocked: true, wait: time.Millisecond}
}

// asPanic returns err's panicError, if it is one.
func asPanic(err error) (*panicError, bool) {
	var e *panicError
	ok := errors.As(err, &e)
	return e, ok
}

// The pump's long-lived goroutines, as flightfeed_pump_panics_total's
// where label names them.
const (
	WhereReadAhead     = "read-ahead"
	WhereEpochRenew    = "epoch-renew"
	WhereDatabaseWatch = "database-watch"
)

// loopPanicked logs a panic recovered in one of the pump's long-lived
// goroutines with its stack, counts it and returns it as an error.
func (p *Pump) loopPanicked(where string, v any) *panics.Error {
	e := &panics.Error{Value: v, Stack: debug.Stack()}
	p.log.Error(e, "panic in a long-lived goroutine of the pump (a FlightFeed bug); it goes on after a backoff",
		"where", where, "stack", string(e.Stack))
	p.obs.LoopPanicked(where)
	return e
}

// restart keeps one of the pump's long-lived loops running through its
// panics (logged and counted as loopPanicked does), with the feed's
// backoff.
func (p *Pump) restart(where string) panics.Restart {
	spec := p.feed.Spec.Pump
	return panics.Restart{Where: where, Initial: spec.BackoffInitial.Duration, Max: spec.BackoffMax.Duration, Clock: p.clock,
		OnPanic: func(e *panics.Error, inARow int, wait time.Duration) {
			p.log.Error(e, "panic in a long-lived goroutine of the pump (a FlightFeed bug); restarting it",
				"where", where, "in_a_row", inARow, "after", wait.String(), "stack", string(e.Stack))
			p.obs.LoopPanicked(where)
		}}
}

// hooks are test seams: set only by tests of this package (export_test.go).
type hooks struct {
	// decode is called before a row is decoded, applied after a message's
	// effects are in the batch and before its result: a panic there
	// stands for a bug of the decoder or of a write path.
	decode, applied func(id int64)
}
