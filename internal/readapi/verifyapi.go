package readapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/verify"
)

// Verifying a day in the pump pod:
//
//	POST /api/v1/feeds/{ns}/{name}/verifications  {"day": "YYYY-MM-DD", "timeout": "30m"}
//
// rebuilds the day from its archived messages and compares it with what
// the feed serves (`flightfeed verify`, package verify/rebuild), in this
// pod, and answers when done: 200 with a VerifyResult whose outcome is
// IDENTICAL, DIFFERS or NOT_VERIFIABLE (recorded as the day's last
// verification, shown on its FlightFeedDay). One verification at a time
// per feed, wherever it runs (this pod, the feed's other pump pod, a
// workstation): another is refused at once with 429. The caller going
// away (kubectl interrupted) cancels it; so does its timeout (default
// DefaultVerifyTimeout, at most MaxVerifyTimeout). It wants create on
// flightfeeds/verifications: it writes a scratch schema and the record,
// and costs the database a replay of the archive.

// Bounds of a verification's timeout.
const (
	DefaultVerifyTimeout = 30 * time.Minute
	MaxVerifyTimeout     = 2 * time.Hour
)

// Verifier verifies day of feed for the read API; ranBy names the caller.
// A day the archive cannot rebuild is a *verify.NotVerifiable; another
// verification running is store.ErrVerifyRunning (rebuild.Verify).
type Verifier func(ctx context.Context, feed *config.Feed, day, ranBy string) (verify.Record, verify.Report, error)

// VerifyRequest is the body of POST verifications.
type VerifyRequest struct {
	Day string `json:"day"`
	// Timeout bounds the verification (a Go duration, "30m"); empty:
	// DefaultVerifyTimeout.
	Timeout string `json:"timeout,omitempty"`
}

// VerifyResult answers POST verifications: the record kept as the day's
// last verification, and the comparison (absent when NOT_VERIFIABLE).
type VerifyResult struct {
	verify.Record
	Report *verify.Report `json:"report,omitempty"`
}

// verifications holds the feeds being verified by this pod, so a second
// request is refused before it opens a connection.
type verifications struct {
	mu      sync.Mutex
	running map[string]string // feed → day
}

func (v *verifications) start(feed, day string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if d, ok := v.running[feed]; ok {
		return d, false
	}
	if v.running == nil {
		v.running = map[string]string{}
	}
	v.running[feed] = day
	return "", true
}

func (v *verifications) done(feed string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.running, feed)
}

// WithVerifier makes the API verify days with v; without one the route
// answers 501.
func (a *ReadAPI) WithVerifier(v Verifier) *ReadAPI {
	a.verifier = v
	return a
}

func (a *ReadAPI) verifyDay(w http.ResponseWriter, r *http.Request) {
	var body VerifyRequest
	if !readBody(w, r, &body) {
		return
	}
	if _, err := time.Parse(time.DateOnly, body.Day); err != nil {
		httpError(w, http.StatusBadRequest, `"day" %q: must be YYYY-MM-DD`, body.Day)
		return
	}
	timeout := DefaultVerifyTimeout
	if body.Timeout != "" {
		d, err := time.ParseDuration(body.Timeout)
		if err != nil || d <= 0 || d > MaxVerifyTimeout {
			httpError(w, http.StatusBadRequest, `"timeout" %q: must be a duration above 0 and at most %s`, body.Timeout, MaxVerifyTimeout)
			return
		}
		timeout = d
	}
	if a.verifier == nil {
		httpError(w, http.StatusNotImplemented, "this pump pod does not verify days")
		return
	}
	key, feed, ok := a.lookup(w, r)
	if !ok {
		return
	}
	if day, ok := a.verifying.start(key.String(), body.Day); !ok {
		a.busy(w, r, fmt.Sprintf("a verification of %s (day %s) is running in this pod; one at a time per feed", key, day))
		return
	}
	defer a.verifying.done(key.String())
	// The answer comes when the rebuild is done: the write deadline the
	// server sets for quick answers is pushed past the timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout + time.Minute))
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	ranBy := "api"
	if user, ok := r.Context().Value(callerKey{}).(string); ok && user != "" {
		ranBy = "api " + user
	}
	start := time.Now()
	a.log.Info("verifying", "flightfeed", key.String(), "day", body.Day, "user", ranBy)
	rec, rep, err := a.verifier(ctx, feed, body.Day, ranBy)
	var nv *verify.NotVerifiable
	switch {
	case errors.Is(err, store.ErrVerifyRunning):
		a.busy(w, r, fmt.Sprintf("%s: another verification of %s is running (in its other pump pod or from a workstation); one at a time per feed", err, key))
		return
	case errors.As(err, &nv) && rec.Outcome != "":
		writeJSON(w, http.StatusOK, VerifyResult{Record: rec})
	case err != nil && ctx.Err() != nil:
		a.log.Info("verification stopped", "flightfeed", key.String(), "day", body.Day, "error", err.Error())
		httpError(w, http.StatusServiceUnavailable, "the verification of %s stopped after %s: %v", body.Day, time.Since(start).Round(time.Second), context.Cause(ctx))
	case err != nil:
		a.log.Info("verification failed", "flightfeed", key.String(), "day", body.Day, "error", err.Error())
		httpError(w, http.StatusServiceUnavailable, "the verification of %s failed: %v", body.Day, err)
	default:
		writeJSON(w, http.StatusOK, VerifyResult{Record: rec, Report: &rep})
	}
	a.log.Info("verified", "flightfeed", key.String(), "day", body.Day, "seconds", time.Since(start).Seconds())
}
