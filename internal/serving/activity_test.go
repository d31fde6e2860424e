package serving

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// A pump pod's readiness is answered from the API server's last answer to
// any of its clients (a Lease renewal, a watch event) while it is fresh:
// no /version request per probe; once stale, /version is asked; a server
// error is no answer.
func TestAPIServerAnsweredSparesTheVersionCall(t *testing.T) {
	var versions, failLease atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/version":
			versions.Add(1)
			_, _ = io.WriteString(w, `{"major":"1","minor":"37"}`)
		case strings.HasSuffix(r.URL.Path, "/watch"):
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "event\n")
		case failLease.Load() == 1:
			http.Error(w, "etcd down", http.StatusInternalServerError)
		default:
			http.Error(w, "forbidden", http.StatusForbidden) // the server answering all the same
		}
	}))
	defer srv.Close()
	clk := clocktesting.NewFakeClock(time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC))
	a := NewAPIActivity(clk)
	cfg := a.Wrap(&rest.Config{Host: srv.URL})
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	check := APIServerAnswered(kube, a, 10*time.Second)
	probe := func() {
		t.Helper()
		if err := check(httptest.NewRequest(http.MethodGet, "/readyz", nil)); err != nil {
			t.Fatal(err)
		}
	}
	call := func(path string) {
		t.Helper()
		body, err := kube.CoreV1().RESTClient().Get().AbsPath(path).Stream(t.Context())
		if err == nil {
			_, _ = io.ReadAll(body)
			_ = body.Close()
		}
	}

	probe() // nothing answered yet: asks /version
	if versions.Load() != 1 {
		t.Fatalf("first probe: %d /version calls, want 1", versions.Load())
	}
	for range 5 {
		clk.Step(3 * time.Second)
		call("/lease") // a 403 is an answer
		probe()
	}
	if versions.Load() != 1 {
		t.Fatalf("probes with fresh answers: %d /version calls, want 1", versions.Load())
	}
	// A watch's events arrive in one long response: its reads are answers.
	clk.Step(11 * time.Second)
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/watch").Stream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(9 * time.Second) // the headers' answer is now 9 s old
	if _, err := io.ReadAll(body); err != nil {
		t.Fatal(err)
	}
	_ = body.Close()
	clk.Step(9 * time.Second)
	probe()
	if versions.Load() != 1 {
		t.Fatalf("after a watch event: %d /version calls, want 1", versions.Load())
	}
	// Server errors are no answer: once the last answer is stale, /version.
	failLease.Store(1)
	clk.Step(5 * time.Second)
	call("/lease")
	probe()
	if versions.Load() != 2 {
		t.Fatalf("after server errors only: %d /version calls, want 2", versions.Load())
	}
	// And a server that answers nothing makes the probe fail.
	srv.Close()
	clk.Step(time.Minute)
	if err := check(httptest.NewRequest(http.MethodGet, "/readyz", nil)); err == nil {
		t.Fatal("ready with the API server gone")
	}
}
