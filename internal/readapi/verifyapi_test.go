package readapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/verify"
)

// verifyCall is what the verifier was asked.
type verifyCall struct {
	day, ranBy string
	deadline   time.Duration
}

// verifyAPI is the operations API with a verifier that answers with do.
func verifyAPI(t *testing.T, do func(ctx context.Context, day string) (verify.Record, verify.Report, error)) (*ReadAPI, chan verifyCall) {
	t.Helper()
	a, _ := opsAPI(t)
	calls := make(chan verifyCall, 10)
	a.WithVerifier(func(ctx context.Context, feed *config.Feed, day, ranBy string) (verify.Record, verify.Report, error) {
		if feed.Name != testFeed {
			t.Errorf("verifier asked for feed %s", feed.Name)
		}
		dl, _ := ctx.Deadline()
		calls <- verifyCall{day: day, ranBy: ranBy, deadline: time.Until(dl).Round(time.Minute)}
		return do(ctx, day)
	})
	return a, calls
}

func identical(_ context.Context, day string) (verify.Record, verify.Report, error) {
	return verify.Record{Day: day, Outcome: verify.OutcomeIdentical, Flights: 2, Messages: 4}, verify.Report{Day: day, Flights: 2, Messages: 4}, nil
}

// The route wants create on flightfeeds/verifications, checks its body
// before it verifies anything, and answers each outcome as a document.
func TestVerifyRoute(t *testing.T) {
	a, calls := verifyAPI(t, identical)
	for _, tc := range []struct {
		token, body string
		want        int
		wantErr     string
	}{
		{readerToken, `{"day":"2026-09-09"}`, http.StatusForbidden, "may not create flightfeeds/verifications"},
		{"", `{"day":"2026-09-09"}`, http.StatusUnauthorized, "bearer token"},
		{operatorToken, `{"day":"2026-9-9"}`, http.StatusBadRequest, `\"day\" \"2026-9-9\": must be YYYY-MM-DD`},
		{operatorToken, `{"day":"2026-09-09","timeout":"3h"}`, http.StatusBadRequest, `\"timeout\" \"3h\": must be a duration above 0 and at most 2h0m0s`},
		{operatorToken, `{"day":"2026-09-09","timeout":"-1s"}`, http.StatusBadRequest, "must be a duration above 0"},
		{operatorToken, `{"day":"2026-09-09","extra":1}`, http.StatusBadRequest, "unknown field"},
	} {
		rec := serveOps(t, a, "POST", "/verifications", TokenHeader, tc.token, tc.body)
		if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.wantErr) {
			t.Errorf("POST verifications %s as %q: %d %s, want %d %q", tc.body, tc.token, rec.Code, rec.Body, tc.want, tc.wantErr)
		}
	}
	if len(calls) != 0 {
		t.Fatalf("%d verifications ran for refused requests", len(calls))
	}

	rec := serveOps(t, a, "POST", "/verifications", TokenHeader, operatorToken, `{"day":"2026-09-09","timeout":"10m"}`)
	var res VerifyResult
	if err := json.Unmarshal(rec.Body.Bytes(), &res); rec.Code != http.StatusOK || err != nil || res.Outcome != verify.OutcomeIdentical ||
		res.Report == nil || res.Report.Flights != 2 || res.Day != "2026-09-09" {
		t.Fatalf("verify: %d %s (%v)", rec.Code, rec.Body, err)
	}
	if c := <-calls; c.day != "2026-09-09" || c.ranBy != "api operator" || c.deadline != 10*time.Minute {
		t.Fatalf("verifier asked %+v, want day 2026-09-09 by api operator within 10m", c)
	}
	rec = serveOps(t, a, "POST", "/verifications", TokenHeader, operatorToken, `{"day":"2026-09-09"}`)
	if c := <-calls; rec.Code != http.StatusOK || c.deadline != DefaultVerifyTimeout {
		t.Fatalf("verify without a timeout: %d, deadline %s, want %s", rec.Code, c.deadline, DefaultVerifyTimeout)
	}
}

func TestVerifyRouteOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		do      func(context.Context, string) (verify.Record, verify.Report, error)
		want    int
		outcome string
		body    string
	}{
		{"not verifiable", func(_ context.Context, day string) (verify.Record, verify.Report, error) {
			nv := &verify.NotVerifiable{Day: day, Reason: "message 1 is not in the archive"}
			return verify.RecordOf(day, verify.Report{}, nv), verify.Report{}, nv
		}, http.StatusOK, verify.OutcomeNotVerifiable, `"reason":"message 1 is not in the archive"`},
		{"differs", func(_ context.Context, day string) (verify.Record, verify.Report, error) {
			rep := verify.Report{Day: day, Flights: 2, Diffs: []verify.FlightDiff{{FLID: 2, Kind: verify.Differs}}}
			return verify.RecordOf(day, rep, nil), rep, nil
		}, http.StatusOK, verify.OutcomeDiffers, `"diffs":[{"flid":2,"kind":"differs"}]`},
		{"running elsewhere", func(context.Context, string) (verify.Record, verify.Report, error) {
			return verify.Record{}, verify.Report{}, store.ErrVerifyRunning
		}, http.StatusTooManyRequests, "", "another verification of this feed is running"},
		{"failed", func(context.Context, string) (verify.Record, verify.Report, error) {
			return verify.Record{}, verify.Report{}, errors.New("migrate the scratch schema: permission denied")
		}, http.StatusServiceUnavailable, "", "the verification of 2026-09-09 failed: migrate the scratch schema: permission denied"},
	} {
		a, _ := verifyAPI(t, tc.do)
		rec := serveOps(t, a, "POST", "/verifications", TokenHeader, operatorToken, `{"day":"2026-09-09"}`)
		var res VerifyResult
		_ = json.Unmarshal(rec.Body.Bytes(), &res)
		if rec.Code != tc.want || res.Outcome != tc.outcome || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s: %d %s, want %d outcome %q with %s", tc.name, rec.Code, rec.Body, tc.want, tc.outcome, tc.body)
		}
		if tc.want == http.StatusTooManyRequests && rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s: 429 without Retry-After", tc.name)
		}
	}
}

// One verification at a time per feed in a pod: a second request while
// one runs is refused at once (429), and the caller going away cancels
// the one running.
func TestVerifyRouteOneAtATimeAndCancellable(t *testing.T) {
	started, stopped := make(chan struct{}), make(chan error, 1)
	a, _ := verifyAPI(t, func(ctx context.Context, _ string) (verify.Record, verify.Report, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return verify.Record{}, verify.Report{}, ctx.Err()
	})
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan int, 1)
	go func() {
		r := httptest.NewRequestWithContext(ctx, "POST", "/api/v1/feeds/"+testNamespace+"/"+testFeed+"/verifications", strings.NewReader(`{"day":"2026-09-09"}`))
		r.Header.Set(TokenHeader, "Bearer "+operatorToken)
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, r)
		first <- rec.Code
	}()
	<-started
	rec := serveOps(t, a, "POST", "/verifications", TokenHeader, operatorToken, `{"day":"2026-09-10"}`)
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "(day 2026-09-09) is running in this pod") {
		t.Fatalf("a second verification while one runs: %d %s", rec.Code, rec.Body)
	}
	cancel()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the verification stopped with %v, want the caller's cancellation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the caller went away and the verification kept running")
	}
	if code := <-first; code != http.StatusServiceUnavailable {
		t.Fatalf("the cancelled verification answered %d", code)
	}
	// The slot is free again.
	a.WithVerifier(func(ctx context.Context, _ *config.Feed, day, _ string) (verify.Record, verify.Report, error) {
		return identical(ctx, day)
	})
	if rec := serveOps(t, a, "POST", "/verifications", TokenHeader, operatorToken, `{"day":"2026-09-10"}`); rec.Code != http.StatusOK {
		t.Fatalf("a verification after the cancelled one: %d %s", rec.Code, rec.Body)
	}
}
