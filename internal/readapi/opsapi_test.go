package readapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// fakeOps is the feed's store as the operations routes see it; the real
// store behind them is tested by the CLI's tests through the API server's
// service proxy (internal/cli).
type fakeOps struct {
	dead        []store.DeadMessage
	deadFilter  store.DeadFilter
	parked      []store.ParkedEvent
	replays     map[int64]store.ReplayRequest
	requested   []ReplayRequestBody
	redelivered [][]int64
	rerequested []string
	writers     int
}

func (f *fakeOps) ReadFlights(context.Context, store.Filter) ([]flight.State, error) { return nil, nil }
func (f *fakeOps) DeadMessages(_ context.Context, df store.DeadFilter) ([]store.DeadMessage, error) {
	f.deadFilter = df
	return f.dead, nil
}
func (f *fakeOps) ParkedEvents(context.Context, int) ([]store.ParkedEvent, error) {
	return f.parked, nil
}
func (f *fakeOps) Replay(_ context.Context, id int64) (store.ReplayRequest, error) {
	r, ok := f.replays[id]
	if !ok {
		return r, fmt.Errorf("read replay request %d: %w", id, store.ErrNotFound)
	}
	return r, nil
}

// The operations routes read no reference data (refapi_test.go reads the
// real store).
func (f *fakeOps) ReferenceLists(context.Context) ([]store.ReferenceList, error) { return nil, nil }
func (f *fakeOps) ReferenceRecords(context.Context, string, string, int) ([]store.ReferenceRecord, error) {
	return nil, nil
}
func (f *fakeOps) FlightHistory(context.Context, flight.FLID, store.HistoryFilter) ([]store.FlightChange, error) {
	return nil, store.ErrNoFlight
}

func (f *fakeOps) ReferenceRecordByKey(_ context.Context, typ, key string) (store.ReferenceRecord, error) {
	return store.ReferenceRecord{}, fmt.Errorf("%s %q: %w", typ, key, store.ErrNoReferenceRecord)
}
func (f *fakeOps) RequestReplay(_ context.Context, id int64, policy string) (store.ReplayRequest, error) {
	if id == 1 {
		return store.ReplayRequest{}, &store.ReplayRefusedError{MessageID: 1, Why: "it is SUCCEEDED, not DEAD"}
	}
	f.requested = append(f.requested, ReplayRequestBody{ID: id, Policy: policy})
	return store.ReplayRequest{ID: 7, MessageID: id, Policy: policy, State: store.ReplayPending}, nil
}
func (f *fakeOps) ReleaseFailedRequests(_ context.Context, kind, day string) (int64, error) {
	f.rerequested = append(f.rerequested, kind+" "+day)
	return 1, nil
}
func (f *fakeOps) RedeliverParked(_ context.Context, ids []int64) ([]int64, error) {
	f.redelivered = append(f.redelivered, ids)
	return ids, nil
}

func opsAPI(t *testing.T) (*ReadAPI, *fakeOps) {
	t.Helper()
	ops := &fakeOps{
		dead:    []store.DeadMessage{{MessageID: 4, Status: "DEAD", Reason: "BAD_FLID", ReceivedAt: time.Date(2026, 12, 5, 1, 2, 3, 0, time.UTC)}},
		parked:  []store.ParkedEvent{{ID: 41, Kind: "KAFKA_SCHD", FLID: 9, LastError: "MESSAGE_TOO_LARGE"}},
		replays: map[int64]store.ReplayRequest{7: {ID: 7, MessageID: 4, State: store.ReplayDone, Result: "SUCCEEDED"}},
	}
	a := testAPI(t, "", 0, nil, ops)
	a.openWriter = func(context.Context, *config.Feed) (FeedWriter, func(), error) {
		ops.writers++
		return ops, func() {}, nil
	}
	return a, ops
}

func opsRequest(t *testing.T, method, path, header, token, body string) *httptest.ResponseRecorder {
	t.Helper()
	a, _ := opsAPI(t)
	return serveOps(t, a, method, path, header, token, body)
}

func serveOps(t *testing.T, a *ReadAPI, method, path, header, token, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), method, "/api/v1/feeds/"+testNamespace+"/"+testFeed+path, strings.NewReader(body))
	if token != "" {
		r.Header.Set(header, "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, r)
	return rec
}

// Each route wants its own permission: the flights' reader cannot list
// messages nor record a replay, the operator cannot read flights; the
// token may come in Authorization or, through the service proxy, in
// TokenHeader.
func TestOperationsRoutesWantTheirPermission(t *testing.T) {
	for _, tc := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/dead", operatorToken, "", http.StatusOK},
		{"GET", "/dead", readerToken, "", http.StatusForbidden},
		{"GET", "/dead", strangerToken, "", http.StatusForbidden},
		{"GET", "/dead", "", "", http.StatusUnauthorized},
		{"GET", "/dead", "forged", "", http.StatusUnauthorized},
		{"GET", "/parked", operatorToken, "", http.StatusOK},
		{"GET", "/parked", readerToken, "", http.StatusForbidden},
		{"POST", "/parked/redeliver", operatorToken, `{"all":true}`, http.StatusOK},
		{"POST", "/parked/redeliver", readerToken, `{"all":true}`, http.StatusForbidden},
		{"POST", "/replays", operatorToken, `{"id":4,"policy":"as-new"}`, http.StatusCreated},
		{"POST", "/replays", readerToken, `{"id":4,"policy":"as-new"}`, http.StatusForbidden},
		{"GET", "/replays/7", operatorToken, "", http.StatusOK},
		{"GET", "/replays/7", readerToken, "", http.StatusForbidden},
		{"POST", "/rerequests", operatorToken, `{"day":"2026-09-09"}`, http.StatusOK},
		{"POST", "/rerequests", readerToken, `{"day":"2026-09-09"}`, http.StatusForbidden},
		{"GET", "/flights", operatorToken, "", http.StatusForbidden},
		{"GET", "/flights", readerToken, "", http.StatusOK},
		// A method the route does not take.
		{"DELETE", "/replays/7", operatorToken, "", http.StatusMethodNotAllowed},
	} {
		for _, header := range []string{"Authorization", TokenHeader} {
			rec := opsRequest(t, tc.method, tc.path, header, tc.token, tc.body)
			if rec.Code != tc.want {
				t.Errorf("%s %s as %q in %s: %d %s, want %d", tc.method, tc.path, tc.token, header, rec.Code, rec.Body, tc.want)
			}
			if rec.Code >= 400 && rec.Code != http.StatusMethodNotAllowed && !strings.Contains(rec.Body.String(), `"error":`) {
				t.Errorf("%s %s: %d without a JSON error: %s", tc.method, tc.path, rec.Code, rec.Body)
			}
		}
	}
}

// What the routes answer: the store's rows as JSON, bad input a 400 naming
// it, a refused replay 409 with the store's reason, an unknown request
// 404; nothing is written for a request refused before the store.
func TestOperationsRoutesAnswers(t *testing.T) {
	a, ops := opsAPI(t)
	do := func(method, path, body string) *httptest.ResponseRecorder {
		return serveOps(t, a, method, path, TokenHeader, operatorToken, body)
	}

	rec := do("GET", "/dead?reason=BAD_FLID&since=2026-12-04T00:00:00Z&limit=3", "")
	var dead struct{ Items []store.DeadMessage }
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &dead) != nil || len(dead.Items) != 1 ||
		dead.Items[0].MessageID != 4 || dead.Items[0].Reason != "BAD_FLID" || !dead.Items[0].ReceivedAt.Equal(ops.dead[0].ReceivedAt) {
		t.Fatalf("dead: %d %s", rec.Code, rec.Body)
	}
	if f := ops.deadFilter; f.Reason != "BAD_FLID" || f.Limit != 3 || !f.Since.Equal(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)) || f.Replayed {
		t.Errorf("dead filter %+v", f)
	}
	if rec := do("GET", "/dead?replayed=true", ""); rec.Code != http.StatusOK || !ops.deadFilter.Replayed {
		t.Errorf("dead?replayed=true: %d, filter %+v", rec.Code, ops.deadFilter)
	}
	var parked struct{ Items []store.ParkedEvent }
	if rec := do("GET", "/parked", ""); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &parked) != nil || len(parked.Items) != 1 ||
		parked.Items[0].ID != 41 || parked.Items[0].FLID != 9 || parked.Items[0].LastError != "MESSAGE_TOO_LARGE" {
		t.Fatalf("parked: %d %s", rec.Code, rec.Body)
	}
	ops.dead = nil
	if rec := do("GET", "/dead", ""); rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"items":[]}` {
		t.Errorf("no dead messages: %d %s", rec.Code, rec.Body)
	}

	for _, tc := range []struct{ method, path, body, want string }{
		{"GET", "/dead?limit=0", "", `limit \"0\": must be 1 to 5000`},
		{"GET", "/dead?limit=5001", "", `limit \"5001\": must be 1 to 5000`},
		{"GET", "/dead?since=yesterday", "", `since \"yesterday\": must be an RFC 3339 time`},
		{"GET", "/dead?replayed=maybe", "", `replayed \"maybe\": must be true or false`},
		{"GET", "/parked?limit=x", "", `limit \"x\": must be 1 to 5000`},
		{"GET", "/replays/x", "", `replay request id \"x\": must be a positive integer`},
		{"POST", "/replays", `{"id":4,"policy":"later"}`, `\"policy\" \"later\": must be as-new or skip-conflicts`},
		{"POST", "/replays", `{"id":0,"policy":"as-new"}`, `\"id\" (a mailbox row id) must be positive`},
		{"POST", "/replays", `{"id":4,"policy":"as-new","force":true}`, `unknown field \"force\"`},
		{"POST", "/replays", `{"id":4,"policy":"as-new"}{}`, `one JSON object expected`},
		{"POST", "/replays", `[`, `request body`},
		{"POST", "/parked/redeliver", `{}`, `give either \"ids\" (event ids) or \"all\": true`},
		{"POST", "/parked/redeliver", `{"ids":[1],"all":true}`, `give either \"ids\" (event ids) or \"all\": true`},
		{"POST", "/parked/redeliver", `{"ids":[-1]}`, `event id -1: must be positive`},
		{"POST", "/rerequests", `{"day":"9/9"}`, `\"day\" \"9/9\": must be YYYY-MM-DD`},
		{"POST", "/parked/redeliver", `{"ids":[` + strings.Repeat("1,", MaxListLimit) + `1]}`, `at most 5000 ids at once, not 5001`},
	} {
		rec := do(tc.method, tc.path, tc.body)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s %s %s: %d %s, want 400 with %s", tc.method, tc.path, tc.body, rec.Code, rec.Body, tc.want)
		}
	}
	if ops.writers != 0 || len(ops.requested) != 0 || len(ops.redelivered) != 0 || len(ops.rerequested) != 0 {
		t.Fatalf("refused requests reached the store: %d writers, %v, %v", ops.writers, ops.requested, ops.redelivered)
	}

	if rec := do("POST", "/replays", `{"id":1,"policy":"as-new"}`); rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "replay of message 1 refused: it is SUCCEEDED, not DEAD") {
		t.Errorf("refused replay: %d %s", rec.Code, rec.Body)
	}
	var req store.ReplayRequest
	if rec := do("POST", "/replays", `{"id":4,"policy":"skip-conflicts"}`); rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &req) != nil ||
		req.ID != 7 || req.MessageID != 4 || req.Policy != "skip-conflicts" || req.State != store.ReplayPending {
		t.Errorf("replay: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/replays/7", ""); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &req) != nil || req.Result != "SUCCEEDED" {
		t.Errorf("replay 7: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/replays/8", ""); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "replay request 8 not found") {
		t.Errorf("replay 8: %d %s", rec.Code, rec.Body)
	}
	if rec := do("POST", "/parked/redeliver", `{"ids":[41,42]}`); rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"redelivered":[41,42]}` {
		t.Errorf("redeliver: %d %s", rec.Code, rec.Body)
	}
	if rec := do("POST", "/parked/redeliver", `{"all":true}`); rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"redelivered":[]}` {
		t.Errorf("redeliver all: %d %s", rec.Code, rec.Body)
	}
	if fmt.Sprint(ops.requested) != "[{4 skip-conflicts}]" || fmt.Sprint(ops.redelivered) != "[[41 42] []]" || ops.writers != 4 {
		t.Errorf("store saw %v, %v, %d writers", ops.requested, ops.redelivered, ops.writers)
	}
}
