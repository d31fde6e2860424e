package controllers

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestDecideLease(t *testing.T) {
	t0 := time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC)
	const d = 15 * time.Second
	for _, tc := range []struct {
		name       string
		holder     string
		observedAt time.Time
		now        time.Time
		want       leaseAction
	}{
		{"free lease", "", t0, t0, leaseAcquire},
		{"released lease (holder cleared)", "", t0, t0.Add(time.Second), leaseAcquire},
		{"mine, fresh", "me", t0, t0.Add(time.Second), leaseRenew},
		{"mine, even when my clock says it expired", "me", t0, t0.Add(time.Hour), leaseRenew},
		{"other, just seen", "other", t0, t0, leaseWait},
		{"other, seen unchanged for less than the duration", "other", t0, t0.Add(d - time.Nanosecond), leaseWait},
		{"other, seen unchanged for the whole duration", "other", t0, t0.Add(d), leaseAcquire},
		{"other, long expired", "other", t0, t0.Add(time.Hour), leaseAcquire},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideLease(tc.holder, "me", d, tc.observedAt, tc.now); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLeaseTimings(t *testing.T) {
	def := LeaseTimings{}.WithDefaults()
	if def != (LeaseTimings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}) {
		t.Fatalf("defaults %+v", def)
	}
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []LeaseTimings{
		{LeaseDuration: 10 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: time.Second},
		{LeaseDuration: 15 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 2 * time.Second},
		{LeaseDuration: 900 * time.Millisecond, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestNamesStayValid(t *testing.T) {
	long := strings.Repeat("a", 240) + "." + strings.Repeat("b", 12)
	for _, name := range []string{"pek", long, strings.Repeat("x", 253)} {
		lease := LeaseName(name)
		if errs := validation.IsDNS1123Subdomain(lease); len(errs) > 0 {
			t.Errorf("lease name %q: %v", lease, errs)
		}
		day := DayName(name, "2026-09-09")
		if errs := validation.IsDNS1123Subdomain(day); len(errs) > 0 {
			t.Errorf("day name %q: %v", day, errs)
		}
		if !strings.HasSuffix(day, "-2026-09-09") {
			t.Errorf("day name %q lost its day", day)
		}
	}
	if LeaseName("pek") != "flightfeed-pek" || DayName("pek", "2026-09-09") != "pek-2026-09-09" {
		t.Fatalf("short names changed: %s %s", LeaseName("pek"), DayName("pek", "2026-09-09"))
	}
	if LeaseName(long) == LeaseName(long[:len(long)-1]+"c") {
		t.Fatal("two long names share a lease")
	}
}
