// Package panics turns a panic of a long-running part of a pump pod (the
// pump's loop, the Kafka dispatcher, building them) into an error, so the
// pod restarts that part with backoff instead of dying with it. Panics
// while decoding or applying one message are the pump's own business
// (that message becomes DEAD(INTERNAL)). Restart keeps a long-lived
// goroutine (the read-ahead's loop, the outbox flush, the status reporter,
// a Lease holder) running through its panics, with backoff. No I/O: the
// caller logs and counts.
package panics

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"k8s.io/utils/clock"

	"github.com/flightfeed/flightfeed/internal/backoff"
)

// Error is a recovered panic with the stack of the goroutine that
// panicked.
type Error struct {
	Value any
	Stack []byte
}

func (e *Error) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Guard runs fn and returns a panic of it as an *Error.
func Guard(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &Error{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// Restart keeps a long-lived loop of a pump pod alive: it runs loop and,
// when it panics, reports the panic (OnPanic: log it, count it), waits a
// backoff and runs loop again, until loop returns without panicking (its
// result is Run's) or ctx ends (nil). The loop restarts from the state it
// keeps outside the goroutine, so it must hold nothing it cannot read
// again.
type Restart struct {
	// Where names the loop (the where label of
	// flightfeed_pump_panics_total).
	Where string
	// Initial and Max bound the wait before a restart, which doubles with
	// every panic in a row (with jitter), so a loop that panics at every
	// iteration does not spin. A loop that ran for Max or longer before it
	// panicked starts again from Initial.
	Initial, Max time.Duration
	// Clock measures the runs and the waits (default the real clock).
	Clock clock.Clock
	// OnPanic receives every recovered panic, the panics in a row so far
	// and the wait before the restart (optional).
	OnPanic func(e *Error, inARow int, wait time.Duration)
}

// Run runs loop as Restart says.
func (r Restart) Run(ctx context.Context, loop func(context.Context) error) error {
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	inARow := 0
	for {
		started := clk.Now()
		err := Guard(func() error { return loop(ctx) })
		var pe *Error
		if !errors.As(err, &pe) {
			return err
		}
		if clk.Since(started) >= r.Max {
			inARow = 0
		}
		inARow++
		wait := backoff.Delay(inARow, r.Initial, r.Max, backoff.Shared)
		if r.OnPanic != nil {
			r.OnPanic(pe, inARow, wait)
		}
		if ctx.Err() != nil {
			return nil
		}
		t := clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}
