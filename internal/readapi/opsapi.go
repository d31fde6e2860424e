package readapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/store"
)

// The operations routes: what `flightfeed dead|parked|replay --feed NS/NAME`
// ask through the API server's service proxy, so that a person needs
// Kubernetes RBAC and a token for the feed, never the feed's Secrets or a
// route to its database.
//
//	GET  /api/v1/feeds/{ns}/{name}/dead?since=RFC3339&reason=R&limit=N&replayed=true (get flightfeeds/messages)
//	GET  /api/v1/feeds/{ns}/{name}/parked?limit=N                        (get flightfeeds/messages)
//	POST /api/v1/feeds/{ns}/{name}/parked/redeliver {"ids":[…]}|{"all":true} (create flightfeeds/replays)
//	POST /api/v1/feeds/{ns}/{name}/replays {"id":N,"policy":"as-new"}    (create flightfeeds/replays)
//	GET  /api/v1/feeds/{ns}/{name}/replays/{id}                          (get flightfeeds/replays)
//	POST /api/v1/feeds/{ns}/{name}/rerequests {"day":"YYYY-MM-DD"}       (create flightfeeds/replays)
//
// Reads go through the read API's read-only connection. The two writes only
// record a request (a replay_request row, parked events made PENDING), which
// the leading pump carries out between batches, as the CLI with --config
// does: any pump pod of the feed can record one, standby included, with a
// connection as the feed's writer opened for that request alone.

// MaxListLimit bounds the dead and parked lists of one request.
const MaxListLimit = 5000

// maxOpsBody bounds a POST body: an id list of MaxListLimit ids fits.
const maxOpsBody = 128 << 10

// FeedWriter is what the two write routes need of the feed's store.
type FeedWriter interface {
	RequestReplay(ctx context.Context, id int64, policy string) (store.ReplayRequest, error)
	RedeliverParked(ctx context.Context, ids []int64) ([]int64, error)
	// ReleaseFailedRequests releases the FAILED full-day requests of kind
	// for day (an operator's re-request); how many it released.
	ReleaseFailedRequests(ctx context.Context, kind, day string) (int64, error)
}

// items is the list responses' shape.
type items[T any] struct {
	Items []T `json:"items"`
}

// RedeliverRequest is the body of POST …/parked/redeliver.
type RedeliverRequest struct {
	IDs []int64 `json:"ids,omitempty"`
	All bool    `json:"all,omitempty"`
}

// RedeliverResult names the events made PENDING again.
type RedeliverResult struct {
	Redelivered []int64 `json:"redelivered"`
}

// ReplayRequestBody is the body of POST …/replays.
type ReplayRequestBody struct {
	ID     int64  `json:"id"`
	Policy string `json:"policy"`
}

// RerequestBody is the body of POST …/rerequests.
type RerequestBody struct {
	Day string `json:"day"`
}

// RerequestResult says how many FAILED requests of the day were released
// (0: the day was not held).
type RerequestResult struct {
	Released int64 `json:"released"`
}

// listLimit reads ?limit= (default def, 1 to MaxListLimit).
func listLimit(w http.ResponseWriter, r *http.Request, def int) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxListLimit {
		httpError(w, http.StatusBadRequest, "limit %q: must be 1 to %d", v, MaxListLimit)
		return 0, false
	}
	return n, true
}

func (a *ReadAPI) dead(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := listLimit(w, r, 200)
	if !ok {
		return
	}
	f := store.DeadFilter{Reason: strings.TrimSpace(q.Get("reason")), Limit: limit}
	if v := q.Get("replayed"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			httpError(w, http.StatusBadRequest, "replayed %q: must be true or false", v)
			return
		}
		f.Replayed = b
	}
	if f.Since, ok = queryTime(w, q, "since"); !ok {
		return
	}
	a.withReader(w, r, "list dead messages", func(ctx context.Context, fr FeedReader) (any, error) {
		dead, err := fr.DeadMessages(ctx, f)
		return items[store.DeadMessage]{Items: nonNil(dead)}, err
	})
}

func (a *ReadAPI) parked(w http.ResponseWriter, r *http.Request) {
	limit, ok := listLimit(w, r, 200)
	if !ok {
		return
	}
	a.withReader(w, r, "list parked events", func(ctx context.Context, fr FeedReader) (any, error) {
		parked, err := fr.ParkedEvents(ctx, limit)
		return items[store.ParkedEvent]{Items: nonNil(parked)}, err
	})
}

func (a *ReadAPI) replay(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		httpError(w, http.StatusBadRequest, "replay request id %q: must be a positive integer", r.PathValue("id"))
		return
	}
	a.withReader(w, r, "read replay request", func(ctx context.Context, fr FeedReader) (any, error) {
		req, err := fr.Replay(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFound{fmt.Sprintf("replay request %d not found", id)}
		}
		return req, err
	})
}

func (a *ReadAPI) redeliver(w http.ResponseWriter, r *http.Request) {
	var body RedeliverRequest
	if !readBody(w, r, &body) {
		return
	}
	if body.All == (len(body.IDs) > 0) {
		httpError(w, http.StatusBadRequest, `give either "ids" (event ids) or "all": true`)
		return
	}
	if len(body.IDs) > MaxListLimit {
		httpError(w, http.StatusBadRequest, "at most %d ids at once, not %d", MaxListLimit, len(body.IDs))
		return
	}
	for _, id := range body.IDs {
		if id <= 0 {
			httpError(w, http.StatusBadRequest, "event id %d: must be positive", id)
			return
		}
	}
	a.withWriter(w, r, "re-deliver parked events", func(ctx context.Context, fw FeedWriter) (int, any, error) {
		done, err := fw.RedeliverParked(ctx, body.IDs)
		return http.StatusOK, RedeliverResult{Redelivered: nonNil(done)}, err
	})
}

func (a *ReadAPI) requestReplay(w http.ResponseWriter, r *http.Request) {
	var body ReplayRequestBody
	if !readBody(w, r, &body) {
		return
	}
	if body.ID <= 0 {
		httpError(w, http.StatusBadRequest, `"id" (a mailbox row id) must be positive`)
		return
	}
	if body.Policy != store.ReplayAsNew && body.Policy != store.ReplaySkipConflicts {
		httpError(w, http.StatusBadRequest, `"policy" %q: must be %s or %s`, body.Policy, store.ReplayAsNew, store.ReplaySkipConflicts)
		return
	}
	a.withWriter(w, r, "record replay request", func(ctx context.Context, fw FeedWriter) (int, any, error) {
		req, err := fw.RequestReplay(ctx, body.ID, body.Policy)
		var refused *store.ReplayRefusedError
		if errors.As(err, &refused) {
			return 0, nil, conflict{refused.Error()}
		}
		return http.StatusCreated, req, err
	})
}

func (a *ReadAPI) rerequest(w http.ResponseWriter, r *http.Request) {
	var body RerequestBody
	if !readBody(w, r, &body) {
		return
	}
	if _, err := time.Parse(time.DateOnly, body.Day); err != nil {
		httpError(w, http.StatusBadRequest, `"day" %q: must be YYYY-MM-DD`, body.Day)
		return
	}
	a.withWriter(w, r, "re-request a day", func(ctx context.Context, fw FeedWriter) (int, any, error) {
		n, err := fw.ReleaseFailedRequests(ctx, "RQFD", body.Day)
		return http.StatusOK, RerequestResult{Released: n}, err
	})
}

// notFound and conflict are answers, not failures: 404 and 409 with their
// text.
type notFound struct{ msg string }

func (e notFound) Error() string { return e.msg }

type conflict struct{ msg string }

func (e conflict) Error() string { return e.msg }

// readBody decodes a JSON body of at most maxOpsBody bytes into v, or
// answers 400 itself.
func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxOpsBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		httpError(w, http.StatusBadRequest, "request body: %v", err)
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		httpError(w, http.StatusBadRequest, "request body: one JSON object expected")
		return false
	}
	return true
}

// withReader runs do on the feed's read-only connection and answers with
// its result (200), or the error's status.
func (a *ReadAPI) withReader(w http.ResponseWriter, r *http.Request, what string, do func(context.Context, FeedReader) (any, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), a.readTimeout)
	defer cancel()
	key, reader, ok := a.feedReader(ctx, w, r)
	if !ok {
		return
	}
	out, err := do(ctx, reader)
	a.answer(w, key, what, http.StatusOK, out, err)
}

// feedReader finds the feed of the path and its read-only connection, or
// answers 404 or 503 itself.
func (a *ReadAPI) feedReader(ctx context.Context, w http.ResponseWriter, r *http.Request) (types.NamespacedName, FeedReader, bool) {
	key, feed, ok := a.lookup(w, r)
	if !ok {
		return key, nil, false
	}
	reader, err := a.reader(ctx, key, feed)
	if err != nil {
		a.log.Info("read api: open database", "flightfeed", key.String(), "error", err.Error())
		httpError(w, http.StatusServiceUnavailable, "database of %s unavailable", key)
		return key, nil, false
	}
	return key, reader, true
}

// withWriter runs do on a connection as the feed's writer, opened for this
// request and closed after it.
func (a *ReadAPI) withWriter(w http.ResponseWriter, r *http.Request, what string, do func(context.Context, FeedWriter) (int, any, error)) {
	key, feed, ok := a.lookup(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.readTimeout)
	defer cancel()
	writer, closeFn, err := a.openWriter(ctx, feed)
	if err != nil {
		a.log.Info("read api: open database as the writer", "flightfeed", key.String(), "error", err.Error())
		httpError(w, http.StatusServiceUnavailable, "database of %s unavailable", key)
		return
	}
	defer closeFn()
	code, out, err := do(ctx, writer)
	if err == nil {
		a.log.Info("read api: "+what, "flightfeed", key.String(), "user", callerOf(r.Context()))
	}
	a.answer(w, key, what, code, out, err)
}

// answer writes out with code, or err as its status: 404, 409, else 503.
func (a *ReadAPI) answer(w http.ResponseWriter, key types.NamespacedName, what string, code int, out any, err error) {
	var nf notFound
	var cf conflict
	switch {
	case errors.As(err, &nf):
		httpError(w, http.StatusNotFound, "%s", nf.msg)
	case errors.As(err, &cf):
		httpError(w, http.StatusConflict, "%s", cf.msg)
	case err != nil:
		a.log.Info("read api: "+what, "flightfeed", key.String(), "error", err.Error())
		httpError(w, http.StatusServiceUnavailable, "%s of %s failed", what, key)
	default:
		writeJSON(w, code, out)
	}
}

// lookup finds the feed of the path, or answers 404 itself.
func (a *ReadAPI) lookup(w http.ResponseWriter, r *http.Request) (types.NamespacedName, *config.Feed, bool) {
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	feed, ok := a.dir.Lookup(key)
	if !ok {
		a.forget(key)
		httpError(w, http.StatusNotFound, "flightfeed %s not found, or it cannot run (see its status)", key)
		return key, nil, false
	}
	return key, feed, true
}

// openWriteStore connects as the feed's writer (database.dsnSecretRef),
// one connection, without migrating: the leader migrates.
func openWriteStore(ctx context.Context, feed *config.Feed) (FeedWriter, func(), error) {
	dbTLS, err := feed.DatabaseTLS()
	if err != nil {
		return nil, nil, err
	}
	s, err := store.Open(ctx, feed.Secrets.DatabaseDSN, store.Options{MaxConns: 1, Location: feed.Location, TLS: dbTLS})
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// callerKey keeps the authorized caller's user name in a request's context.
type callerKey struct{}

// callerOf is the user name authorized stored, for logs.
func callerOf(ctx context.Context) string {
	user, _ := ctx.Value(callerKey{}).(string)
	return user
}

// nonNil makes an empty list [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
