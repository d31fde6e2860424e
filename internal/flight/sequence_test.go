package flight

import (
	"errors"
	"testing"
)

func TestParseSequence(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{in: "1", want: 1},
		{in: "0", want: 0},
		{in: "00", want: 0},
		{in: " 3 ", want: 3},
		{in: "\u201d1\u201d", want: 1}, // smart quotes seen in real feeds
		{in: "\u201c12\u201d", want: 12},
		{in: "", wantErr: true},
		{in: "\u201d\u201d", wantErr: true},
		{in: "A", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "1.0", wantErr: true},
		{in: "1234567890", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSequence(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrBadSequence) {
					t.Fatalf("ParseSequence(%q) error = %v, want ErrBadSequence", tt.in, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseSequence(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}
