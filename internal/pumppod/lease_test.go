package pumppod

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	clocktesting "k8s.io/utils/clock/testing"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
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
		day := DayName(name, "2026-09-09")
		if errs := validation.IsDNS1123Subdomain(day); len(errs) > 0 {
			t.Errorf("day name %q: %v", day, errs)
		}
		if !strings.HasSuffix(day, "-2026-09-09") {
			t.Errorf("day name %q lost its day", day)
		}
	}
	if DayName("pek", "2026-09-09") != "pek-2026-09-09" {
		t.Fatalf("short names changed: %s", DayName("pek", "2026-09-09"))
	}
}

// The Lease of a feed, in its namespace (and, in releases that ran the
// pumps inside the operator, in the operator's): at most 63 characters, a
// valid name, readable when short, and never shared by two feeds.
func TestFeedLeaseName(t *testing.T) {
	ns63 := strings.Repeat("n", 63)
	name253 := strings.Repeat("f", 120) + "." + strings.Repeat("g", 132)
	for _, tc := range []struct {
		ns, name, want string
	}{
		{"ops", "pek", "flightfeed.ops.pek"},
		{"ops", "pek.v2", "flightfeed.ops.pek.v2"},
		// 62 characters stay as they are.
		{"ops", strings.Repeat("p", 47), "flightfeed.ops." + strings.Repeat("p", 47)},
		// 63 and more are cut and hashed to exactly 63.
		{"ops", strings.Repeat("p", 48), ""},
		{ns63, name253, ""},
		// A dot or dash before the hash is replaced, the length kept.
		{"ops", strings.Repeat("p", 30) + "." + strings.Repeat("q", 40), ""},
		{"ops", strings.Repeat("p", 30) + "--" + strings.Repeat("q", 40), ""},
	} {
		got := FeedLeaseName(types.NamespacedName{Namespace: tc.ns, Name: tc.name})
		if tc.want != "" && got != tc.want {
			t.Errorf("%s/%s: %q, want %q", tc.ns, tc.name, got, tc.want)
		}
		if tc.want == "" && len(got) != 63 {
			t.Errorf("%s/%s: %q has %d characters, want a shortened 63", tc.ns, tc.name, got, len(got))
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("%s/%s: %q: %v", tc.ns, tc.name, got, errs)
		}
		if !strings.HasPrefix(got, "flightfeed.") {
			t.Errorf("%q lost its prefix", got)
		}
	}
	// Splits of the same characters between namespace and name, and long
	// names differing in their last character, get distinct Leases.
	seen := map[string]string{}
	for _, k := range []types.NamespacedName{
		{Namespace: "a-b", Name: "c"}, {Namespace: "a", Name: "b.c"}, {Namespace: "a", Name: "b-c"},
		{Namespace: "ab", Name: "c"}, {Namespace: "a", Name: "bc"},
		{Namespace: "ops", Name: strings.Repeat("p", 60) + "a"}, {Namespace: "ops", Name: strings.Repeat("p", 60) + "b"},
		{Namespace: "ops", Name: strings.Repeat("p", 47)}, {Namespace: "ops", Name: strings.Repeat("p", 47) + "x"},
	} {
		n := FeedLeaseName(k)
		if prev, ok := seen[n]; ok {
			t.Errorf("%s and %s share the Lease %q", prev, k, n)
		}
		seen[n] = k.String()
	}
}

// forbiddenLeases answers every call as an API server whose RBAC does not
// let this replica touch Leases.
type forbiddenLeases struct {
	coordinationv1client.LeaseInterface
}

func (forbiddenLeases) Leases(string) coordinationv1client.LeaseInterface { return forbiddenLeases{} }

func forbidden(name string) error {
	return apierrors.NewForbidden(coordinationv1.Resource("leases"), name, errors.New("RBAC: access denied"))
}

func (forbiddenLeases) Get(_ context.Context, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	return nil, forbidden(name)
}

func (forbiddenLeases) Update(_ context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return nil, forbidden(l.Name)
}

// logLines is a logger whose every line arrives on a channel.
func logLines() (logr.Logger, <-chan string) {
	lines := make(chan string, 100)
	return funcr.New(func(prefix, args string) {
		select {
		case lines <- prefix + " " + args:
		default:
		}
	}, funcr.Options{}), lines
}

func nextLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l := <-lines:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no log line")
		return ""
	}
}

// A Lease the API server refuses (RBAC 403) is logged with its error at
// every try, whether acquiring or renewing, instead of looping silently.
func TestForbiddenLeaseIsLogged(t *testing.T) {
	t.Parallel()
	key := types.NamespacedName{Namespace: "ns", Name: "flightfeed-pek"}
	timings := LeaseTimings{}.WithDefaults()
	clk := clocktesting.NewFakeClock(time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC))
	e := newLeaseElector(forbiddenLeases{}, key, "replica-a", metav1.ObjectMeta{}, timings, clk)
	log, lines := logLines()
	wantForbidden := func(line, attempt string) {
		t.Helper()
		for _, want := range []string{"lease " + attempt + " failed", `"lease"="ns/flightfeed-pek"`, `"identity"="replica-a"`,
			"forbidden", "RBAC: access denied"} {
			if !strings.Contains(line, want) {
				t.Fatalf("log line %q lacks %q", line, want)
			}
		}
	}

	ctx, cancel := context.WithCancel(logf.IntoContext(t.Context(), log))
	acquired := make(chan bool, 1)
	go func() { acquired <- e.acquire(ctx) }()
	wantForbidden(nextLine(t, lines), "acquire")
	// And again at the next try.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(2 * timings.RetryPeriod)
	wantForbidden(nextLine(t, lines), "acquire")
	cancel()
	if <-acquired {
		t.Fatal("acquired a forbidden Lease")
	}

	// A holder whose renewals are refused logs each one, then gives up
	// after the renew deadline. (A clock of its own: acquire left a timer
	// on the first.)
	clk = clocktesting.NewFakeClock(clk.Now())
	e = newLeaseElector(forbiddenLeases{}, key, "replica-a", metav1.ObjectMeta{}, timings, clk)
	e.renewed(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}, clk.Now())
	held := make(chan error, 1)
	go func() { held <- e.hold(logf.IntoContext(t.Context(), log)) }()
	renewals := 0
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
			continue
		}
		clk.Step(timings.RetryPeriod)
		select {
		case err := <-held:
			if !errors.Is(err, errLeaseLost) || renewals < 2 {
				t.Fatalf("hold ended with %v after %d logged renewals", err, renewals)
			}
			return
		case l := <-lines:
			wantForbidden(l, "renew")
			renewals++
		}
	}
	t.Fatalf("hold still running after %d logged renewals", renewals)
}
