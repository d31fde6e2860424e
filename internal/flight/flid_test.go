package flight

import (
	"errors"
	"testing"
)

func TestParseFLID(t *testing.T) {
	tests := []struct {
		in      string
		want    FLID
		wantErr bool
	}{
		{in: "121112312", want: 121112312},
		{in: "0", want: 0},
		{in: "007", want: 7},
		{in: "999999999999", want: MaxFLID},
		{in: "", wantErr: true},
		{in: "1234567890123", wantErr: true},
		{in: "12a", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "+1", wantErr: true},
		{in: " 1", wantErr: true},
		{in: "１２", wantErr: true}, // full-width digits
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFLID(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrBadFLID) {
					t.Fatalf("ParseFLID(%q) error = %v, want ErrBadFLID", tt.in, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseFLID(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestFLIDStringIsCanonical(t *testing.T) {
	f, err := ParseFLID("000121")
	if err != nil {
		t.Fatal(err)
	}
	if f.String() != "121" {
		t.Fatalf("String() = %q, want 121", f.String())
	}
	if !MaxFLID.Valid() || (MaxFLID + 1).Valid() {
		t.Fatal("Valid() boundary wrong")
	}
}
