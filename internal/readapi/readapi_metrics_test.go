package readapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/flightfeed/flightfeed/internal/config"
)

// Every answer of the read API is counted by route and status code and
// timed by route; requests that match no route (no token, an unknown
// path) are route "other", so a path's feed or flight never becomes a
// label.
func TestReadAPICountsAndTimesEveryAnswerByRoute(t *testing.T) {
	m := APIMetrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests"}, []string{"route", "code"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "duration"}, []string{"route"}),
	}
	reader := &blockingReader{entered: make(chan struct{}, 10), release: make(chan struct{})}
	close(reader.release)
	feed := &config.Feed{Namespace: testNamespace, Name: testFeed, Secrets: config.Secrets{DatabaseDSN: "postgres://unused"}}
	a := NewReadAPI(feedMap{{Namespace: testNamespace, Name: testFeed}: feed}, fakeAccess(), 2, m, logr.Discard())
	a.open = func(context.Context, *config.Feed) (FeedReader, func(), error) { return reader, func() {}, nil }
	t.Cleanup(a.Close)
	h := a.Handler()

	for _, tc := range []struct {
		token, path string
		code        int
	}{
		{readerToken, "/api/v1/feeds/" + testNamespace + "/" + testFeed + "/flights?limit=5", http.StatusOK},
		{readerToken, "/api/v1/feeds/" + testNamespace + "/" + testFeed + "/flights?limit=5", http.StatusOK},
		{strangerToken, "/api/v1/feeds/" + testNamespace + "/" + testFeed + "/flights", http.StatusForbidden},
		{"", "/api/v1/feeds/" + testNamespace + "/" + testFeed + "/flights", http.StatusUnauthorized},
		{readerToken, "/api/v1/feeds/" + testNamespace + "/" + testFeed + "/nothing-here", http.StatusNotFound},
	} {
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, tc.path, nil)
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.code {
			t.Fatalf("GET %s: %d %s, want %d", tc.path, rec.Code, rec.Body, tc.code)
		}
	}
	for _, want := range []struct {
		route, code string
		n           float64
	}{{"flights", "200", 2}, {"flights", "403", 1}, {"other", "401", 1}, {"other", "404", 1}} {
		if got := metricOf(t, m.Requests.WithLabelValues(want.route, want.code)).GetCounter().GetValue(); got != want.n {
			t.Errorf("requests{route=%s,code=%s} = %v, want %v", want.route, want.code, got, want.n)
		}
	}
	ch := make(chan prometheus.Metric, 100)
	m.Requests.Collect(ch)
	if n := len(ch); n != 4 {
		t.Errorf("%d request series, want the 4 above", n)
	}
	for route, want := range map[string]uint64{"flights": 3, "other": 2} {
		if got := sampleCount(t, m.Duration, route); got != want {
			t.Errorf("duration{route=%s} observed %d answers, want %d", route, got, want)
		}
	}
}

func sampleCount(t *testing.T, h *prometheus.HistogramVec, route string) uint64 {
	t.Helper()
	return metricOf(t, h.WithLabelValues(route).(prometheus.Histogram)).GetHistogram().GetSampleCount()
}

// metricOf is the one sample c collects.
func metricOf(t *testing.T, c prometheus.Collector) *dto.Metric {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var pb dto.Metric
	if err := (<-ch).Write(&pb); err != nil {
		t.Fatal(err)
	}
	return &pb
}
