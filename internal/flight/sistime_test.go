package flight

import (
	"errors"
	"testing"
	"time"
)

var shanghai = time.FixedZone("Asia/Shanghai", 8*3600)

func TestParseSISTime(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "09SEP261015", want: time.Date(2026, 9, 9, 10, 15, 0, 0, shanghai)},
		{in: "16Nov200535", want: time.Date(2020, 11, 16, 5, 35, 0, 0, shanghai)},
		{in: "16nov200535", want: time.Date(2020, 11, 16, 5, 35, 0, 0, shanghai)},
		{in: " 29FEB240000 ", want: time.Date(2024, 2, 29, 0, 0, 0, 0, shanghai)},
		{in: "31DEC992359", want: time.Date(2099, 12, 31, 23, 59, 0, 0, shanghai)},
		{in: "29FEB250000", wantErr: true},
		{in: "00JAN260000", wantErr: true},
		{in: "01JAN262400", wantErr: true},
		{in: "01JAN262360", wantErr: true},
		{in: "01XYZ260000", wantErr: true},
		{in: "1JAN260000", wantErr: true},
		{in: "01JAN2600000", wantErr: true},
		{in: "20260909101500", wantErr: true},
		{in: "", wantErr: true},
		{in: "0１JAN26000", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSISTime(tt.in, shanghai)
			if tt.wantErr {
				if !errors.Is(err, ErrBadSISTime) {
					t.Fatalf("ParseSISTime(%q) error = %v, want ErrBadSISTime", tt.in, err)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("ParseSISTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
	if _, err := ParseSISTime("09SEP261015", nil); !errors.Is(err, ErrBadSISTime) {
		t.Fatalf("nil location: error = %v", err)
	}
}

func TestFormatSISTimeRoundTrip(t *testing.T) {
	in := time.Date(2026, 9, 8, 18, 5, 0, 0, time.UTC) // 02:05 next day in Shanghai
	s := FormatSISTime(in, shanghai)
	if s != "09SEP260205" {
		t.Fatalf("FormatSISTime = %q", s)
	}
	back, err := ParseSISTime(s, shanghai)
	if err != nil || !back.Equal(in) {
		t.Fatalf("round trip = %v, %v", back, err)
	}
}

func TestOperationDayOfUsesAirportZone(t *testing.T) {
	day, err := OperationDayOf("10SEP260030", shanghai)
	if err != nil || day != "2026-09-10" {
		t.Fatalf("OperationDayOf = %q, %v", day, err)
	}
}
