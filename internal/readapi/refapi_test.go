package readapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// gateKeys are the gates populateReference stores, keys ascending.
var gateKeys = []string{"A1", "A2", "B7", "B8", "B9", "C1", "C2"}

// populateReference stores reference data as the pump does: message 10 is
// the whole gate list (GLST DNLD: gateKeys, each named "Gate KEY"), message
// 11 adds the airline CA (AIRL UPD), message 12 the delay code 81/A (a key
// with a slash). It returns the database's DSN.
func populateReference(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	db := storetest.New(t, store.Options{Location: time.UTC})
	var docs [][]byte
	for _, k := range gateKeys {
		docs = append(docs, fmt.Appendf(nil, `{"GCOD":%q,"GTNM":"Gate %s"}`, k, k))
	}
	tx, err := db.Store.Begin(ctx, db.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.ApplyReference(ctx, []store.ReferenceChange{
		{MessageID: 10, Type: "GLST", Op: pumpdata.RefReplace, Keys: gateKeys, Docs: docs},
		{MessageID: 11, Type: "AIRL", Op: pumpdata.RefUpsert, Keys: []string{"CA"},
			Docs: [][]byte{[]byte(`{"ITOP":"CA","ICOP":"CCA","ONAM":"AIR CHINA","OGRP":["STAR ALLIANCE"]}`)}},
		{MessageID: 12, Type: "DLYL", Op: pumpdata.RefUpsert, Keys: []string{"81/A"}, Docs: [][]byte{[]byte(`{"DCOD":"81/A"}`)}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return db.DSN
}

// getRef is a GET of the feed's path ("/ref", "/ref/gates?limit=2", …)
// with token in header.
func getRef(t *testing.T, h http.Handler, header, token, path string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/feeds/"+testNamespace+"/"+testFeed+path, nil)
	if token != "" {
		r.Header.Set(header, "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// The reference routes want what the flights want (get flightfeeds/flights,
// a token of the feed's audience): the flights' reader reads them, the
// operator (messages and replays only) and a stranger are 403, no token or
// a refused one 401, each with a JSON error, the token in Authorization or
// in TokenHeader.
func TestRefRoutesWantTheFlightsPermission(t *testing.T) {
	h := testAPI(t, populateReference(t), 0, nil, nil).Handler()
	for _, path := range []string{"/ref", "/ref/gates", "/ref/gates/B7"} {
		for _, tc := range []struct {
			token string
			want  int
		}{
			{readerToken, http.StatusOK},
			{operatorToken, http.StatusForbidden},
			{strangerToken, http.StatusForbidden},
			{"", http.StatusUnauthorized},
			{"forged", http.StatusUnauthorized},
		} {
			for _, header := range []string{"Authorization", TokenHeader} {
				rec := getRef(t, h, header, tc.token, path)
				if rec.Code != tc.want {
					t.Errorf("GET %s as %q in %s: %d %s, want %d", path, tc.token, header, rec.Code, rec.Body, tc.want)
				}
				if rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"error":`) {
					t.Errorf("GET %s as %q: %d without a JSON error: %s", path, tc.token, rec.Code, rec.Body)
				}
				if rec.Code == http.StatusForbidden && !strings.Contains(rec.Body.String(), "get on flightfeeds/flights") {
					t.Errorf("GET %s as %q: 403 not naming the flights' permission: %s", path, tc.token, rec.Body)
				}
			}
		}
	}
}

// refPage decodes a page of records: their keys and the cursor.
func refPage(t *testing.T, rec *httptest.ResponseRecorder) (keys []string, cursor string) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var p RefPage
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	for _, it := range p.Items {
		if it.Type != "GLST" || it.Name != "gates" || it.MessageID != 10 {
			t.Errorf("record %+v", it)
		}
		keys = append(keys, it.Key)
	}
	return keys, p.Cursor
}

// What the reference routes answer from the real store: every list of the
// catalogue with what is stored of it; a list's records by key, paged with
// the cursor (or after a key); one record with its document; an unknown
// list 400 naming the lists; a key not stored 404.
func TestRefRoutesAnswers(t *testing.T) {
	h := testAPI(t, populateReference(t), 0, nil, nil).Handler()
	get := func(path string) *httptest.ResponseRecorder {
		return getRef(t, h, "Authorization", readerToken, path)
	}

	rec := get("/ref")
	var lists struct{ Items []RefList }
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &lists) != nil {
		t.Fatalf("ref: %d %s", rec.Code, rec.Body)
	}
	byName := map[string]RefList{}
	for _, l := range lists.Items {
		byName[l.Name] = l
	}
	if len(lists.Items) != 23 || lists.Items[0].Name != "abnormal-reasons" {
		t.Errorf("ref lists %d lists, first %+v: want the catalogue's 23 by name", len(lists.Items), lists.Items[0])
	}
	if g := byName["gates"]; g.Type != "GLST" || g.Records != 7 || g.LastMessageID != 10 || g.UpdatedAt.IsZero() ||
		g.ReplacedBy != 10 || g.ReplacedAt.IsZero() || fmt.Sprint(g.Key) != "[GCOD]" {
		t.Errorf("gates: %+v", g)
	}
	if a := byName["airlines"]; a.Type != "AIRL" || a.Records != 1 || a.LastMessageID != 11 || a.ReplacedBy != 0 || !a.ReplacedAt.IsZero() {
		t.Errorf("airlines: %+v", a)
	}
	// A list never received: no records, no message, no times at all in
	// its JSON.
	if c := byName["cities"]; c.Records != 0 || c.LastMessageID != 0 || !c.UpdatedAt.IsZero() {
		t.Errorf("cities: %+v", c)
	}
	if body := rec.Body.String(); !strings.Contains(body, `{"type":"CITY","name":"cities","title":"cities","key":["ITCD","ICCD"],"records":0}`) {
		t.Errorf("a list never received is not bare:\n%s", body)
	}

	// Pages of 3 by the cursor: every gate once, keys ascending, the last
	// page without a cursor; by TYPE or by name alike.
	var all []string
	cursor := ""
	for page := 0; ; page++ {
		q := url.Values{"limit": {"3"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		list := "/ref/gates?"
		if page%2 == 1 {
			list = "/ref/GLST?"
		}
		var keys []string
		keys, cursor = refPage(t, get(list+q.Encode()))
		all = append(all, keys...)
		if cursor == "" {
			break
		}
		if page > 3 {
			t.Fatalf("more than 3 pages of 3 for 7 gates: %v", all)
		}
	}
	if fmt.Sprint(all) != fmt.Sprint(gateKeys) {
		t.Errorf("gates paged by 3: %v, want %v", all, gateKeys)
	}
	if keys, cursor := refPage(t, get("/ref/gates?after=B7&limit=2")); fmt.Sprint(keys) != "[B8 B9]" || cursor == "" {
		t.Errorf("after B7, 2: %v cursor %q", keys, cursor)
	}
	if keys, cursor := refPage(t, get("/ref/gates")); len(keys) != 7 || cursor != "" {
		t.Errorf("default page: %v cursor %q", keys, cursor)
	}
	if rec := get("/ref/countries"); rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"items":[]}` {
		t.Errorf("an empty list: %d %s", rec.Code, rec.Body)
	}

	var one RefRecord
	if rec := get("/ref/gates/B8"); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &one) != nil ||
		one.Key != "B8" || one.Type != "GLST" || one.Name != "gates" || one.MessageID != 10 || one.UpdatedAt.IsZero() ||
		string(one.Record) != `{"GCOD":"B8","GTNM":"Gate B8"}` {
		t.Errorf("gates/B8: %d %s", rec.Code, rec.Body)
	}
	if rec := get("/ref/airl/CA"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"ONAM":"AIR CHINA"`) ||
		!strings.Contains(rec.Body.String(), `"name":"airlines"`) {
		t.Errorf("airl/CA: %d %s", rec.Code, rec.Body)
	}
	if rec := get("/ref/delay-codes/81/A"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"key":"81/A"`) {
		t.Errorf("a key with a slash, delay-codes/81/A: %d %s", rec.Code, rec.Body)
	}
	if rec := get("/ref/gates/ZZ"); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `gates (GLST) record \"ZZ\" not found`) {
		t.Errorf("gates/ZZ: %d %s", rec.Code, rec.Body)
	}

	// A cursor of the airlines is no cursor of the gates.
	airlines := encodeRefCursor("AIRL", "CA")
	for _, tc := range []struct{ path, want string }{
		{"/ref/nope", `unknown reference list \"nope\": one of abnormal-reasons (ABNR), airbridges (ABDG),`},
		{"/ref/nope/B7", `unknown reference list \"nope\"`},
		{"/ref/gates/", `a gates key is required after gates/`},
		{"/ref/FLOP", `unknown reference list \"FLOP\"`},
		{"/ref/gates?limit=0", `limit \"0\": must be 1 to 5000`},
		{"/ref/gates?limit=5001", `limit \"5001\": must be 1 to 5000`},
		{"/ref/gates?cursor=" + airlines, `not a cursor this API returned for gates`},
		{"/ref/gates?cursor=%21", `not a cursor this API returned for gates`},
		{"/ref/gates?cursor=" + encodeRefCursor("GLST", "B7") + "&after=B7", `give either cursor (a page's) or after (a key), not both`},
	} {
		if rec := get(tc.path); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("GET %s: %d %s, want 400 with %s", tc.path, rec.Code, rec.Body, tc.want)
		}
	}
}

// The reference routes share the flights' limits: with every request slot
// taken they are refused at once (429, Retry-After); with a limit=5000
// list of flights being served, a page of records is refused for the
// budget while a single record, which takes none, is served. None of the
// refused requests reaches the store (blockingReader has none behind it).
func TestRefRoutesShareTheFlightsLimits(t *testing.T) {
	const k = 2
	rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "rejected"})
	reader := &blockingReader{entered: make(chan struct{}, 10), release: make(chan struct{})}
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
	var inFlight []<-chan *httptest.ResponseRecorder
	for range k {
		inFlight = append(inFlight, serve("/7"))
		<-reader.entered
	}
	for _, path := range []string{"/ref", "/ref/gates", "/ref/gates/B7"} {
		rec := getRef(t, h, "Authorization", readerToken, path)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != busyRetryAfter {
			t.Errorf("GET %s with every slot taken: %d %q %s", path, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	close(reader.release)
	for _, done := range inFlight {
		<-done
	}

	// The budget: a page of 5,000 flights takes all of a replica's
	// (DefaultMaxConcurrentRequests slots).
	reader.release = make(chan struct{})
	h = testAPI(t, "postgres://unused", DefaultMaxConcurrentRequests, rejected, reader).Handler()
	big := serve(fmt.Sprintf("?limit=%d", MaxPageSize))
	<-reader.entered
	if rec := getRef(t, h, "Authorization", readerToken, "/ref/gates?limit=1"); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "flights at once") {
		t.Errorf("a page of records beyond the budget: %d %s", rec.Code, rec.Body)
	}
	close(reader.release)
	<-big
	if got := metricOf(t, rejected).GetCounter().GetValue(); got != 4 {
		t.Errorf("flightfeed_read_api_rejected_total %v, want 4", got)
	}
}

// Each reference route is counted and timed under a label of its own,
// never its list or key.
func TestRefRoutesAreCountedByRoute(t *testing.T) {
	m := APIMetrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests"}, []string{"route", "code"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "duration"}, []string{"route"}),
	}
	feed := &config.Feed{Namespace: testNamespace, Name: testFeed, Location: time.UTC, Secrets: config.Secrets{DatabaseDSN: populateReference(t)}}
	a := NewReadAPI(feedMap{{Namespace: testNamespace, Name: testFeed}: feed}, fakeAccess(), 2, m, logr.Discard())
	t.Cleanup(a.Close)
	h := a.Handler()
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/ref", http.StatusOK},
		{"/ref/gates", http.StatusOK},
		{"/ref/nope", http.StatusBadRequest},
		{"/ref/gates/B7", http.StatusOK},
		{"/ref/gates/ZZ", http.StatusNotFound},
	} {
		if rec := getRef(t, h, "Authorization", readerToken, tc.path); rec.Code != tc.code {
			t.Fatalf("GET %s: %d %s, want %d", tc.path, rec.Code, rec.Body, tc.code)
		}
	}
	for _, want := range []struct{ route, code string }{
		{"ref-lists", "200"}, {"ref-records", "200"}, {"ref-records", "400"}, {"ref-record", "200"}, {"ref-record", "404"},
	} {
		if got := metricOf(t, m.Requests.WithLabelValues(want.route, want.code)).GetCounter().GetValue(); got != 1 {
			t.Errorf("requests{route=%s,code=%s} = %v, want 1", want.route, want.code, got)
		}
	}
	ch := make(chan prometheus.Metric, 100)
	m.Requests.Collect(ch)
	if n := len(ch); n != 5 {
		t.Errorf("%d request series, want the 5 above", n)
	}
}
