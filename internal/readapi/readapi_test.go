package readapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// The feed every test here serves, and the tokens the fake API server
// knows: reader's user may read its flights, operator's its messages and
// replays (not its flights), stranger's nothing.
const (
	testNamespace, testFeed = "airport", "pek"
	readerToken             = "reader-token"
	operatorToken           = "operator-token"
	strangerToken           = "stranger-token"
)

// feedMap is a FeedLookup of fixed feeds.
type feedMap map[types.NamespacedName]*config.Feed

func (m feedMap) Lookup(key types.NamespacedName) (*config.Feed, bool) {
	f, ok := m[key]
	return f, ok
}

// fakeAccess answers TokenReviews and SubjectAccessReviews as an API
// server would for readerToken and strangerToken; it keeps no state, so
// concurrent requests may use it.
func fakeAccess() *Access {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		aud := tr.Spec.Audiences
		switch tr.Spec.Token {
		case readerToken:
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "reader"}, Audiences: aud}
		case operatorToken:
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "operator"}, Audiences: aud}
		case strangerToken:
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "stranger"}, Audiences: aud}
		}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		ra := sar.Spec.ResourceAttributes
		asked := Permission{Verb: ra.Verb, Subresource: ra.Subresource}
		feedOK := ra.Namespace == testNamespace && ra.Name == testFeed && ra.Resource == ReadResource
		sar.Status.Allowed = feedOK && (sar.Spec.User == "reader" && asked == ReadFlights ||
			sar.Spec.User == "operator" && (asked == ReadMessages || asked == ReadReplays || asked == CreateReplays || asked == CreateVerifications))
		return true, sar, nil
	})
	return NewAccess(c.AuthenticationV1().TokenReviews(), c.AuthorizationV1().SubjectAccessReviews(), nil)
}

// testAPI is the read API of the feed airport/pek, whose database is dsn,
// reading through reader when it is not nil (else the real read store).
func testAPI(t *testing.T, dsn string, maxConcurrent int, rejected prometheus.Counter, reader FeedReader) *ReadAPI {
	t.Helper()
	feed := &config.Feed{Namespace: testNamespace, Name: testFeed, Location: time.UTC, Secrets: config.Secrets{DatabaseDSN: dsn}}
	a := NewReadAPI(feedMap{{Namespace: testNamespace, Name: testFeed}: feed}, fakeAccess(), maxConcurrent, APIMetrics{Rejected: rejected}, logr.Discard())
	if reader != nil {
		a.open = func(context.Context, *config.Feed) (FeedReader, func(), error) { return reader, func() {}, nil }
	}
	t.Cleanup(a.Close)
	return a
}

// request is a GET of the feed's flights (query: "?limit=10"…, or
// "/{flid}") with token.
func request(t *testing.T, token, query string) *http.Request {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/feeds/"+testNamespace+"/"+testFeed+"/flights"+query, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// populate writes n flights (FLIDs 1…n, 1,000 an operation day from
// 2026-01-01 on) the way the pump does, each with every mapped field when
// full, and returns the database's DSN.
func populate(t *testing.T, n int, full bool) string {
	t.Helper()
	ctx := context.Background()
	db := storetest.New(t, store.Options{Location: time.UTC})
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for d := 0; d*1000 < n; d++ {
		day := first.AddDate(0, 0, d).Format(time.DateOnly)
		var records []store.SnapshotRecord
		for i := d * 1000; i < min(n, (d+1)*1000); i++ {
			id := flight.FLID(i + 1)
			if full {
				records = append(records, storetest.FullRecord(id, day, i%89, fmt.Sprintf("G%d", i%40), false))
			} else {
				records = append(records, storetest.Record(id, fmt.Sprintf("CA%d", i+1), day))
			}
		}
		tx, err := db.Store.Begin(ctx, db.Epoch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: int64(d + 1), Type: "SCHD", Styp: "RESP"},
			store.Snapshot{FullDay: true, Day: day, Records: records}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return db.DSN
}

// countingReader counts the flights the store hands the read API.
type countingReader struct {
	FeedReader
	mu   sync.Mutex
	read []int
}

func (c *countingReader) ReadFlights(ctx context.Context, f store.Filter) ([]flight.State, error) {
	states, err := c.FeedReader.ReadFlights(ctx, f)
	c.mu.Lock()
	c.read = append(c.read, len(states))
	c.mu.Unlock()
	return states, err
}

// listPage decodes a list response.
func listPage(t *testing.T, rec *httptest.ResponseRecorder) (flids []flight.FLID, cursor string) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var p struct {
		Items []struct {
			FLID string `json:"FLID"`
		} `json:"items"`
		Cursor string `json:"cursor"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	for _, it := range p.Items {
		id, err := flight.ParseFLID(it.FLID)
		if err != nil {
			t.Fatal(err)
		}
		flids = append(flids, id)
	}
	return flids, p.Cursor
}

// A page of limit flights reads limit+1 flights from the database (the
// one more says whether a page follows), not the feed: over 3,000 flights,
// limit=10 hands the read API 11 states, and so does the next page.
func TestReadAPIReadsOnlyThePageFromTheDatabase(t *testing.T) {
	dsn := populate(t, 3000, false)
	s, err := OpenReadStore(t.Context(), dsn, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	counter := &countingReader{FeedReader: s}
	h := testAPI(t, dsn, 0, nil, counter).Handler()

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, request(t, readerToken, "?limit=10"))
	page1, cursor := listPage(t, rec)
	if len(page1) != 10 || page1[0] != 1 || page1[9] != 10 || cursor == "" {
		t.Fatalf("page 1: %v cursor %q", page1, cursor)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, request(t, readerToken, "?limit=10&cursor="+cursor))
	page2, _ := listPage(t, rec)
	if len(page2) != 10 || page2[0] != 11 || page2[9] != 20 {
		t.Fatalf("page 2: %v", page2)
	}
	// The last page of a day: 1,000 flights a day, pages of 300, fourth page.
	cursor = ""
	for range 4 {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, request(t, readerToken, "?day=2026-01-02&limit=300"+map[bool]string{true: "&cursor=" + cursor}[cursor != ""]))
		var got []flight.FLID
		got, cursor = listPage(t, rec)
		if len(got) == 0 {
			t.Fatal("an empty page before the day's end")
		}
	}
	if cursor != "" {
		t.Fatalf("the fourth page of 300 of a day of 1,000 has a cursor %q", cursor)
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	if want := []int{11, 11, 301, 301, 301, 100}; fmt.Sprint(counter.read) != fmt.Sprint(want) {
		t.Fatalf("flights read from the database per request: %v, want %v", counter.read, want)
	}
}

// blockingReader holds every read until release is closed, saying on
// entered that one began.
type blockingReader struct {
	// FeedReader is nil: only ReadFlights is called.
	FeedReader
	entered chan struct{}
	release chan struct{}
}

func (b *blockingReader) ReadFlights(ctx context.Context, _ store.Filter) ([]flight.State, error) {
	b.entered <- struct{}{}
	select {
	case <-b.release:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// With K requests being served, one more is refused at once — 429,
// Retry-After, the API's JSON error, counted — without reaching the
// database; a caller without a valid token or without the right gets
// 401 or 403 as ever (authorization comes first, takes no slot). Once a
// request ends, its slot serves the next.
func TestReadAPIRefusesRequestsBeyondTheCap(t *testing.T) {
	const k = 2
	rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "rejected"})
	reader := &blockingReader{entered: make(chan struct{}, 10), release: make(chan struct{})}
	h := testAPI(t, "postgres://unused", k, rejected, reader).Handler()

	serve := func(token, query string) <-chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, request(t, token, query))
			done <- rec
		}()
		return done
	}
	var inFlight []<-chan *httptest.ResponseRecorder
	for i := range k {
		query := "?limit=5"
		if i == 1 {
			query = "/7"
		}
		inFlight = append(inFlight, serve(readerToken, query))
		<-reader.entered
	}

	for _, tc := range []struct {
		name, token, query string
		code               int
	}{
		{"one list more", readerToken, "", http.StatusTooManyRequests},
		{"one flight more", readerToken, "/7", http.StatusTooManyRequests},
		{"no token", "", "", http.StatusUnauthorized},
		{"a token the API server refuses", "forged", "", http.StatusUnauthorized},
		{"a user without the right", strangerToken, "", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec *httptest.ResponseRecorder
			select {
			case rec = <-serve(tc.token, tc.query):
			case <-reader.entered:
				t.Fatalf("with %d requests being served, one more reached the database", k)
			}
			var body struct {
				Error string `json:"error"`
			}
			if rec.Code != tc.code || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error == "" {
				t.Fatalf("%d %s, want %d with a JSON error", rec.Code, rec.Body, tc.code)
			}
			if retry := rec.Header().Get("Retry-After"); (tc.code == http.StatusTooManyRequests) != (retry == "1") {
				t.Fatalf("%d with Retry-After %q", rec.Code, retry)
			}
		})
	}
	var m dto.Metric
	if err := rejected.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 2 {
		t.Fatalf("flightfeed_read_api_rejected_total %v, want 2", got)
	}

	close(reader.release)
	for _, done := range inFlight {
		if rec := <-done; rec.Code != http.StatusOK && rec.Code != http.StatusNotFound {
			t.Fatalf("a request served under the cap: %d %s", rec.Code, rec.Body)
		}
	}
	for range 2 * k {
		rec := <-serve(readerToken, "")
		if rec.Code != http.StatusOK {
			t.Fatalf("after the requests ended: %d %s", rec.Code, rec.Body)
		}
		<-reader.entered
	}
}

// discard is a ResponseWriter that keeps only the status and the size of
// the body, so that the test measures the server's memory, not its own.
type discard struct {
	header http.Header
	code   int
	n      int
}

func (d *discard) Header() http.Header { return d.header }
func (d *discard) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}

func (d *discard) Write(p []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	d.n += len(p)
	return len(p), nil
}

// heapBytes is the Go heap's size in objects, garbage not yet collected
// included: what the process holds.
func heapBytes(s []metrics.Sample) uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// maxHeapGrowth bounds the heap growth of 50 list requests at once over
// 10,000 flights. Measured (2-core machine, loaded): 71 MiB with one page
// read per request; 651 MiB with the list reading the whole feed and
// cutting the page in Go (filter.Limit 0 in list): the bound tells them
// apart with room on both sides.
const maxHeapGrowth = 100 << 20

// Fifty list requests at once over a feed of 10,000 flights, each with
// every field, served all at once (the cap raised to 50): the process's
// heap grows by less than maxHeapGrowth, since each request holds one
// page, not the feed.
func TestReadAPIMemoryUnderParallelListsIsBoundedByThePage(t *testing.T) {
	const flights, parallel = 10000, 50
	dsn := populate(t, flights, true)
	a := testAPI(t, dsn, parallel, nil, nil)
	// Fifty lists share the read pool's two connections: on a loaded
	// machine (the race detector, the whole suite beside it) the last ones
	// wait longer than the 30 s a request may take in production, which
	// is not what this test measures.
	a.readTimeout = 10 * time.Minute
	h := a.Handler()

	// One request first: the pool is open and the token's decision cached.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, request(t, readerToken, ""))
	if got, cursor := listPage(t, rec); len(got) != DefaultPageSize || cursor == "" {
		t.Fatalf("first page: %d flights, cursor %q", len(got), cursor)
	}

	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	base := heapBytes(sample)
	var peak uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			peak = max(peak, heapBytes(s))
			select {
			case <-stop:
				return
			default:
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	var wg sync.WaitGroup
	results := make([]*discard, parallel)
	for i := range parallel {
		wg.Go(func() {
			d := &discard{header: http.Header{}}
			h.ServeHTTP(d, request(t, readerToken, ""))
			results[i] = d
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	growth := int64(peak) - int64(base)
	t.Logf("heap %d MiB before, peak %d MiB: grew %d MiB under %d parallel lists of %d KiB each (bound %d MiB)",
		base>>20, peak>>20, growth>>20, parallel, results[0].n>>10, maxHeapGrowth>>20)
	if growth > maxHeapGrowth {
		t.Errorf("the heap grew by %d MiB under %d parallel lists over %d flights, more than %d MiB", growth>>20, parallel, flights, maxHeapGrowth>>20)
	}
	for i, d := range results {
		if d.code != http.StatusOK || d.n == 0 {
			t.Fatalf("request %d: %d, %d bytes", i, d.code, d.n)
		}
	}
}

// The lists being served read at most listBudget flights at once, however
// few requests that is: with one limit=5000 list being served (the whole
// budget of a replica serving 8 requests), another list — even of one
// flight — is refused with 429 though request slots are free, while a
// single flight is still served; once it ends, 8 lists of the default page
// (4,000 flights) are served together.
func TestReadAPIBoundsTheFlightsListsRead(t *testing.T) {
	const k = DefaultMaxConcurrentRequests
	if listBudget(k) != MaxPageSize {
		t.Fatalf("listBudget(%d) = %d, the test assumes %d", k, listBudget(k), MaxPageSize)
	}
	rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "rejected"})
	reader := &blockingReader{entered: make(chan struct{}, 4*k), release: make(chan struct{})}
	h := testAPI(t, "postgres://unused", k, rejected, reader).Handler()
	serve := func(query string) <-chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, request(t, readerToken, query))
			done <- rec
		}()
		return done
	}

	big := serve(fmt.Sprintf("?limit=%d", MaxPageSize))
	<-reader.entered
	var rec *httptest.ResponseRecorder
	select {
	case rec = <-serve("?limit=1"):
	case <-reader.entered:
		t.Fatal("a list beyond the budget of flights reached the database")
	}
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "flights") {
		t.Fatalf("a list beyond the budget: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	one := serve("/7")
	<-reader.entered // a single flight takes no part of the budget

	close(reader.release)
	for _, done := range []<-chan *httptest.ResponseRecorder{big, one} {
		if rec := <-done; rec.Code != http.StatusOK && rec.Code != http.StatusNotFound {
			t.Fatalf("a request within the budget: %d %s", rec.Code, rec.Body)
		}
	}
	reader.release = make(chan struct{})
	var lists []<-chan *httptest.ResponseRecorder
	for range k {
		lists = append(lists, serve(""))
		<-reader.entered
	}
	close(reader.release)
	for _, done := range lists {
		if rec := <-done; rec.Code != http.StatusOK {
			t.Fatalf("%d default pages at once: %d %s", k, rec.Code, rec.Body)
		}
	}
	var m dto.Metric
	if err := rejected.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 1 {
		t.Fatalf("flightfeed_read_api_rejected_total %v, want 1", got)
	}
}
