package panics

import (
	"errors"
	"strings"
	"testing"
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
