// Package panics turns a panic of a long-running part of a pump pod (the
// pump's loop, the Kafka dispatcher, building them) into an error, so the
// pod restarts that part with backoff instead of dying with it. Panics
// while decoding or applying one message are the pump's own business
// (that message becomes DEAD(INTERNAL)). Pure: no I/O.
package panics

import (
	"fmt"
	"runtime/debug"
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
