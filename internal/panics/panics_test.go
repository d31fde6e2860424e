package panics

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestGuard(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		fn      func() error
		want    error
		panicky bool
	}{
		{"returns nil", func() error { return nil }, nil, false},
		{"returns an error", func() error { return boom }, boom, false},
		{"panics with a value", func() error { panic("nil map") }, nil, true},
		{"panics with an error", func() error { panic(boom) }, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Guard(c.fn)
			var pe *Error
			if got := errors.As(err, &pe); got != c.panicky {
				t.Fatalf("Guard = %v, a panic: %v, want %v", err, got, c.panicky)
			}
			if !c.panicky && !errors.Is(err, c.want) {
				t.Fatalf("Guard = %v, want %v", err, c.want)
			}
			if c.panicky && (!strings.HasPrefix(err.Error(), "panic: ") || !strings.Contains(string(pe.Stack), "panics_test.go")) {
				t.Fatalf("error %q, stack %s", err, pe.Stack)
			}
		})
	}
}

// A loop that panics is run again after a backoff that grows with the
// panics in a row, until it returns; its result is Restart's.
func TestRestart(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	runs := 0
	var waits []time.Duration
	done := make(chan error, 1)
	go func() {
		done <- Restart{Where: "loop", Initial: time.Second, Max: time.Minute, Clock: clk,
			OnPanic: func(e *Error, inARow int, wait time.Duration) {
				if inARow != len(waits)+1 || e.Value != "boom" {
					t.Errorf("panic %d: %v, %d in a row", len(waits)+1, e.Value, inARow)
				}
				waits = append(waits, wait)
			}}.Run(t.Context(), func(context.Context) error {
			runs++
			if runs <= 4 {
				panic("boom")
			}
			return errors.New("done")
		})
	}()
	for {
		select {
		case err := <-done:
			if err == nil || err.Error() != "done" || runs != 5 {
				t.Fatalf("Restart = %v after %d runs", err, runs)
			}
			// Each wait is in the upper half of initial·2^(n-1).
			for i, w := range waits {
				ceiling := time.Second << i
				if w < ceiling/2 || w > ceiling {
					t.Fatalf("wait %d = %s, want within [%s, %s]", i+1, w, ceiling/2, ceiling)
				}
			}
			return
		default:
		}
		if clk.HasWaiters() {
			clk.Step(time.Minute)
		}
		runtime.Gosched()
	}
}

// Restart ends with its context, without running the loop again.
func TestRestartStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	runs := 0
	err := Restart{Initial: time.Hour, Max: time.Hour, OnPanic: func(*Error, int, time.Duration) { cancel() }}.Run(ctx,
		func(context.Context) error { runs++; panic("boom") })
	if err != nil || runs != 1 {
		t.Fatalf("Restart = %v after %d runs, want nil after 1", err, runs)
	}
}
