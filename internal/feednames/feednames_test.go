package feednames

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

var dns1035 = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

func TestPump(t *testing.T) {
	long := strings.Repeat("a", 60)
	cases := []struct {
		feed, want string
	}{
		{"pek", "pek-pump"},
		{"pek.t2", ""},
		{"9c", "ff-9c-pump"},
		{long, ""},
		{strings.Repeat("b", 41), strings.Repeat("b", 41) + "-pump"},
		{strings.Repeat("b", 42), ""},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := Pump(c.feed)
		if c.want != "" && got != c.want {
			t.Errorf("Pump(%q) = %q, want %q", c.feed, got, c.want)
		}
		if len(got) > maxPumpName || !dns1035.MatchString(got) {
			t.Errorf("Pump(%q) = %q: not a DNS-1035 label of at most %d characters", c.feed, got, maxPumpName)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("Pump(%q) and Pump(%q) are both %q", c.feed, other, got)
		}
		seen[got] = c.feed
	}
	// Cut names differ when the feeds differ only after the cut, or by a
	// dot where another has a dash.
	if Pump(long+"x") == Pump(long+"y") || Pump("a.b") == Pump("a-b") {
		t.Error("two feeds share a pump name")
	}
}

func TestLease(t *testing.T) {
	if got := Lease(types.NamespacedName{Namespace: "airports", Name: "pek"}); got != "flightfeed.airports.pek" {
		t.Errorf("Lease = %q", got)
	}
	a := Lease(types.NamespacedName{Namespace: "airports", Name: strings.Repeat("p", 70) + "1"})
	b := Lease(types.NamespacedName{Namespace: "airports", Name: strings.Repeat("p", 70) + "2"})
	if len(a) != maxLeaseName || a == b {
		t.Errorf("long names: %q (%d) and %q", a, len(a), b)
	}
}

func TestFeedLabelValue(t *testing.T) {
	if got := FeedLabelValue("pek"); got != "pek" {
		t.Errorf("FeedLabelValue(pek) = %q", got)
	}
	long := strings.Repeat("z", 80)
	if got := FeedLabelValue(long); len(got) > 63 || got == FeedLabelValue(long+"1") {
		t.Errorf("FeedLabelValue(long) = %q", got)
	}
}

func TestPumpCertificateNames(t *testing.T) {
	feed := types.NamespacedName{Namespace: "airports", Name: "pek"}
	if got := PumpTLS("pek"); got != "pek-pump-tls" {
		t.Errorf("PumpTLS = %q", got)
	}
	got := PumpDNSNames(feed, "corp.internal")
	want := []string{"pek-pump.airports.svc", "pek-pump.airports.svc.corp.internal"}
	if !slices.Equal(got, want) {
		t.Errorf("PumpDNSNames = %q, want %q", got, want)
	}
	if got := PumpDNSNames(feed, ""); !slices.Equal(got, []string{"pek-pump.airports.svc"}) {
		t.Errorf("no cluster domain: %q", got)
	}
	// A long or dotted feed name: the Service's (hashed) name, the same the
	// Service gets.
	long := types.NamespacedName{Namespace: "airports", Name: "a.very.long.feed.name.for.the.capital.airport.of.somewhere"}
	if got := PumpDNSNames(long, ""); got[0] != Pump(long.Name)+".airports.svc" {
		t.Errorf("long name: %q", got)
	}
}
