package readapi

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// Read API limits.
const (
	DefaultPageSize = 500
	MaxPageSize     = 5000
	// readTimeout bounds one request's database work.
	readTimeout = 30 * time.Second
	// DefaultMaxConcurrentRequests is how many read API requests a
	// replica serves at once by default; more are refused with 429.
	DefaultMaxConcurrentRequests = 8
	// busyRetryAfter is the Retry-After of a 429, in seconds.
	busyRetryAfter = "1"
)

// listBudget is how many flights the list requests being served may read
// at once: maxConcurrent default-size pages, and never less than one
// page of MaxPageSize. A page's memory grows with its flights (about
// 20 kB a fully populated flight, read and rendered), so counting
// requests alone would let eight limit=5000 lists hold 40,000 flights.
func listBudget(maxConcurrent int) int64 {
	return int64(max(maxConcurrent*DefaultPageSize, MaxPageSize))
}

// FeedReader is the part of the store the read API reads with.
type FeedReader interface {
	ReadFlights(ctx context.Context, f store.Filter) ([]flight.State, error)
	DeadMessages(ctx context.Context, f store.DeadFilter) ([]store.DeadMessage, error)
	ParkedEvents(ctx context.Context, limit int) ([]store.ParkedEvent, error)
	Replay(ctx context.Context, id int64) (store.ReplayRequest, error)
	// ReferenceLists, ReferenceRecords and ReferenceRecordByKey read the
	// reference data (refapi.go); ReferenceRecordByKey answers
	// store.ErrNoReferenceRecord for a key not stored.
	ReferenceLists(ctx context.Context) ([]store.ReferenceList, error)
	ReferenceRecords(ctx context.Context, typ, after string, limit int) ([]store.ReferenceRecord, error)
	ReferenceRecordByKey(ctx context.Context, typ, key string) (store.ReferenceRecord, error)
	// FlightHistory reads a flight's history (historyapi.go); it answers
	// store.ErrNoFlight for a flight the database does not know.
	FlightHistory(ctx context.Context, flid flight.FLID, f store.HistoryFilter) ([]store.FlightChange, error)
}

// FeedLookup finds a runnable feed's configuration
// (*pumppod.FeedDirectory).
type FeedLookup interface {
	Lookup(key types.NamespacedName) (*config.Feed, bool)
}

// ReadAPI serves a feed's current flight state from its PostgreSQL
// database, read-only, on every pump pod of the feed:
//
//	GET /api/v1/feeds/{namespace}/{name}/flights?day=&updatedSince=&limit=&cursor=
//	GET /api/v1/feeds/{namespace}/{name}/flights/{flid}
//	GET /api/v1/feeds/{namespace}/{name}/flights/{flid}/history?day=&since=&limit=&cursor=
//
// (the last one a flight's history, historyapi.go), the reference data (refapi.go) and the operations routes (opsapi.go).
//
// Each response is read in one consistent (REPEATABLE READ, READ ONLY)
// transaction; documents are the canonical JSON of processing rules R7.3, the same
// bytes as KAFKA_SCHD and `flightfeed export`.
//
// Every request carries a bearer token made for the feed (Authorization:
// Bearer, or TokenHeader through the service proxy); Access authenticates
// and authorizes it through the API server before the feed is even looked
// up: no or a rejected token is 401, a user without the route's Permission
// on the feed is 403, each with a JSON error body.
//
// A list reads one page in SQL (keyset: FLID > cursor ORDER BY flid LIMIT
// limit+1), never the feed. At most maxConcurrent authorized requests are
// served at once, each holding its slot from the feed's lookup to the end
// of its response; one more is refused at once with 429 and Retry-After.
// The slot is taken after authorization, so callers without a valid token
// never take one. A list also takes its limit from a budget of flights
// (listBudget): lists asking for more than is left are refused the same
// way, so big pages cannot add up beyond what default pages would.
type ReadAPI struct {
	dir    FeedLookup
	access *Access
	open   func(context.Context, *config.Feed) (FeedReader, func(), error)
	// openWriter connects as the feed's writer for one request
	// (openWriteStore).
	openWriter func(context.Context, *config.Feed) (FeedWriter, func(), error)
	log        logr.Logger
	// slots holds a token per request being served (the concurrency cap).
	slots chan struct{}
	// flights is the budget of flights the lists being served read at
	// once (listBudget); budget is its size.
	flights *semaphore.Weighted
	budget  int64
	// rejected counts the requests refused with 429; requests and
	// duration every answer (APIMetrics).
	rejected prometheus.Counter
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// readTimeout bounds one request's database work (the package's
	// readTimeout; tests that load a busy machine lengthen it).
	readTimeout time.Duration

	mu     sync.Mutex
	stores map[types.NamespacedName]*readStore

	// verifier verifies days (verifyapi.go); verifying the feeds it is
	// verifying now.
	verifier  Verifier
	verifying verifications
}

type readStore struct {
	dsn    string
	reader FeedReader
	close  func()
}

// APIMetrics are the read API's series; a nil field is replaced by an
// unregistered one.
type APIMetrics struct {
	// Rejected counts the requests refused with 429.
	Rejected prometheus.Counter
	// Requests counts every answer by route (routeNames, or routeOther)
	// and status code.
	Requests *prometheus.CounterVec
	// Duration observes every answer's seconds by route.
	Duration *prometheus.HistogramVec
}

// NewReadAPI serves the feeds of dir to the callers access allows, at
// most maxConcurrent requests at once (DefaultMaxConcurrentRequests when
// not positive), counting into m.
func NewReadAPI(dir FeedLookup, access *Access, maxConcurrent int, m APIMetrics, log logr.Logger) *ReadAPI {
	if maxConcurrent <= 0 {
		maxConcurrent = DefaultMaxConcurrentRequests
	}
	if m.Rejected == nil {
		m.Rejected = prometheus.NewCounter(prometheus.CounterOpts{Name: "flightfeed_read_api_rejected_total"})
	}
	if m.Requests == nil {
		m.Requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flightfeed_read_api_requests_total"}, []string{"route", "code"})
	}
	if m.Duration == nil {
		m.Duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flightfeed_read_api_request_duration_seconds"}, []string{"route"})
	}
	return &ReadAPI{dir: dir, access: access, open: openReadStore, openWriter: openWriteStore, log: log, stores: map[types.NamespacedName]*readStore{},
		slots: make(chan struct{}, maxConcurrent), rejected: m.Rejected, requests: m.Requests, duration: m.Duration,
		flights: semaphore.NewWeighted(listBudget(maxConcurrent)), budget: listBudget(maxConcurrent), readTimeout: readTimeout}
}

// readDSN is the DSN the read API connects with: the feed's read-only
// role when it has one, else the writer's.
func readDSN(feed *config.Feed) string {
	if feed.Secrets.ReadDatabaseDSN != "" {
		return feed.Secrets.ReadDatabaseDSN
	}
	return feed.Secrets.DatabaseDSN
}

// openReadStore connects to a feed's database without migrating it: the
// leader migrates, readers only read.
func openReadStore(ctx context.Context, feed *config.Feed) (FeedReader, func(), error) {
	dbTLS, err := feed.DatabaseTLS()
	if err != nil {
		return nil, nil, err
	}
	s, err := openRead(ctx, readDSN(feed), feed.Location, dbTLS)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// OpenReadStore opens the read API's pool: two connections, every session
// opened with default_transaction_read_only = on — the only guard when dsn
// is the writer's, a second one under a read-only role.
func OpenReadStore(ctx context.Context, dsn string, loc *time.Location) (*store.Store, error) {
	return openRead(ctx, dsn, loc, nil)
}

// openRead is OpenReadStore with the feed's database.tls.
func openRead(ctx context.Context, dsn string, loc *time.Location, dbTLS *tls.Config) (*store.Store, error) {
	return store.Open(ctx, dsn, store.Options{MaxConns: 2, Location: loc, ReadOnly: true, TLS: dbTLS})
}

// Handler routes the API. A request without a bearer token is refused
// whatever its path; the feed routes authorize the token for their feed.
func (a *ReadAPI) Handler() http.Handler {
	handlers := map[string]http.HandlerFunc{
		patternFlights:    a.limited(a.list),
		patternFlight:     a.limited(a.one),
		patternHistory:    a.limited(a.history),
		patternRefLists:   a.limited(a.refLists),
		patternRefRecords: a.limited(a.refRecords),
		patternRefRecord:  a.limited(a.refRecord),
		patternDead:       a.limited(a.dead),
		patternParked:     a.limited(a.parked),
		patternRedeliver:  a.limited(a.redeliver),
		patternReplays:    a.limited(a.requestReplay),
		patternReplay:     a.limited(a.replay),
		patternRerequest:  a.limited(a.rerequest),
		// Not limited: a verification holds its request for minutes, and
		// is bounded to one per feed itself.
		patternVerify: a.verifyDay,
	}
	mux := http.NewServeMux()
	for _, rt := range routes {
		h, ok := handlers[rt.Pattern]
		if !ok {
			panic("readapi: no handler for route " + rt.Pattern)
		}
		mux.HandleFunc(rt.Pattern, a.authorized(rt.Permission, h))
	}
	return a.instrumented(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if BearerToken(r) == "" {
			unauthorized(w, "a bearer token is required (Authorization: Bearer <token>, or "+TokenHeader+" through the API server's service proxy)")
			return
		}
		mux.ServeHTTP(w, r)
	}))
}

// The read API's routes.
const (
	patternFlights   = "GET /api/v1/feeds/{namespace}/{name}/flights"
	patternFlight    = "GET /api/v1/feeds/{namespace}/{name}/flights/{flid}"
	patternHistory   = "GET /api/v1/feeds/{namespace}/{name}/flights/{flid}/history"
	patternDead      = "GET /api/v1/feeds/{namespace}/{name}/dead"
	patternParked    = "GET /api/v1/feeds/{namespace}/{name}/parked"
	patternRedeliver = "POST /api/v1/feeds/{namespace}/{name}/parked/redeliver"
	patternReplays   = "POST /api/v1/feeds/{namespace}/{name}/replays"
	patternReplay    = "GET /api/v1/feeds/{namespace}/{name}/replays/{id}"
	patternRerequest = "POST /api/v1/feeds/{namespace}/{name}/rerequests"
	patternVerify    = "POST /api/v1/feeds/{namespace}/{name}/verifications"
	// The reference data (refapi.go).
	patternRefLists   = "GET /api/v1/feeds/{namespace}/{name}/ref"
	patternRefRecords = "GET /api/v1/feeds/{namespace}/{name}/ref/{kind}"
	// A key is the rest of the path: a code may hold a slash.
	patternRefRecord = "GET /api/v1/feeds/{namespace}/{name}/ref/{kind}/{key...}"
	// routeOther labels requests that matched no route (no token, an
	// unknown path or method): the label set stays the routes'.
	routeOther = "other"
)

// Route is one route of the read API.
type Route struct {
	// Pattern is the method and path, as net/http's ServeMux takes it.
	Pattern string
	// Label is the route's label on flightfeed_read_api_requests_total and
	// flightfeed_read_api_request_duration_seconds.
	Label string
	// Permission is what the caller's token needs on the feed.
	Permission Permission
}

// routes are the read API's routes; Handler serves each.
var routes = []Route{
	{patternFlights, "flights", ReadFlights},
	{patternFlight, "flight", ReadFlights},
	{patternHistory, "history", ReadFlights},
	{patternRefLists, "ref-lists", ReadFlights},
	{patternRefRecords, "ref-records", ReadFlights},
	{patternRefRecord, "ref-record", ReadFlights},
	{patternDead, "dead", ReadMessages},
	{patternParked, "parked", ReadMessages},
	{patternRedeliver, "redeliver", CreateReplays},
	{patternReplays, "replays", CreateReplays},
	{patternReplay, "replay", ReadReplays},
	{patternRerequest, "rerequest", CreateReplays},
	{patternVerify, "verify", CreateVerifications},
}

// Routes returns the read API's routes (the documentation's route table
// is checked against them).
func Routes() []Route { return slices.Clone(routes) }

// OtherRoute is the route label of a request that matched no route.
const OtherRoute = routeOther

// routeNames maps a route's pattern to its label.
var routeNames = func() map[string]string {
	m := make(map[string]string, len(routes))
	for _, rt := range routes {
		m[rt.Pattern] = rt.Label
	}
	return m
}()

// instrumented counts and times every answer of next by route and status
// code. The route is the pattern the mux matched (it sets r.Pattern on
// the request it was given), so a path's feed or flight never becomes a
// label; the codes are the few this API writes.
func (a *ReadAPI) instrumented(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		route, ok := routeNames[r.Pattern]
		if !ok {
			route = routeOther
		}
		a.requests.WithLabelValues(route, strconv.Itoa(sw.code())).Inc()
		a.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

// statusWriter remembers the status code written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// authorized serves next only to a token allowed p on the feed of the
// path. The token is never logged; the user name is.
func (a *ReadAPI) authorized(p Permission, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		feed := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
		decision, user, err := a.access.Check(r.Context(), BearerToken(r), p, feed)
		switch {
		case errors.Is(err, ErrTooManyReviews):
			a.busy(w, r, fmt.Sprintf("this pod already reviews %d new tokens a second with the API server", ReviewRate))
		case err != nil:
			a.log.Error(err, "read api: access check", "flightfeed", feed.String())
			httpError(w, http.StatusServiceUnavailable, "cannot check the token with the API server now; try again")
		case decision == Unauthenticated:
			unauthorized(w, fmt.Sprintf("the bearer token is not valid for this feed: the API server's TokenReview refused it for audience %q (make one with kubectl create token SA --audience %s)",
				feednames.Audience(feed), feednames.Audience(feed)))
		case decision == Forbidden:
			a.log.V(1).Info("read api: forbidden", "user", user, "flightfeed", feed.String(), "permission", p.String())
			httpError(w, http.StatusForbidden, "%s may not %s of flightfeed %s (needs a Role with %s on %s/%s in group %s)",
				user, p, feed, p.Verb, ReadResource, p.Subresource, v1alpha1.GroupVersion.Group)
		default:
			next(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, user)))
		}
	}
}

// limited serves next while fewer than cap(a.slots) requests are being
// served, and refuses at once (429, Retry-After) otherwise: a request
// never queues, so the caller, not this process, holds the backlog.
func (a *ReadAPI) limited(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case a.slots <- struct{}{}:
		default:
			a.busy(w, r, fmt.Sprintf("%d read API requests are already being served by this replica", cap(a.slots)))
			return
		}
		defer func() { <-a.slots }()
		next(w, r)
	}
}

// busy refuses a request for want of capacity: 429 with Retry-After,
// counted; why says which capacity.
func (a *ReadAPI) busy(w http.ResponseWriter, r *http.Request, why string) {
	a.rejected.Inc()
	a.log.V(1).Info("read api: busy", "flightfeed", r.PathValue("namespace")+"/"+r.PathValue("name"), "why", why)
	w.Header().Set("Retry-After", busyRetryAfter)
	httpError(w, http.StatusTooManyRequests, "%s; retry after %s s", why, busyRetryAfter)
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="flightfeed"`)
	httpError(w, http.StatusUnauthorized, "%s", msg)
}

// Close closes every database connection.
func (a *ReadAPI) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, s := range a.stores {
		s.close()
		delete(a.stores, k)
	}
}

// page is the list response.
type page struct {
	Items []json.RawMessage `json:"items"`
	// Cursor continues the listing (pass it as ?cursor=); absent on the
	// last page.
	Cursor string `json:"cursor,omitempty"`
}

func (a *ReadAPI) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var filter store.Filter
	day, ok := queryDay(w, q, "day")
	if !ok {
		return
	}
	filter.Day = day
	since, ok := queryTime(w, q, "updatedSince")
	if !ok {
		return
	}
	limit := DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			httpError(w, http.StatusBadRequest, "limit %q: must be 1 to %d", v, MaxPageSize)
			return
		}
		limit = n
	}
	var after flight.FLID
	if v := q.Get("cursor"); v != "" {
		id, err := decodeCursor(v)
		if err != nil {
			httpError(w, http.StatusBadRequest, "cursor %q: not a cursor this API returned", v)
			return
		}
		after = id
	}
	release, ok := a.fromBudget(w, r, limit)
	if !ok {
		return
	}
	defer release()
	// One page in SQL: the limit+1 lowest FLIDs after the cursor, the
	// extra one only telling that another page follows.
	filter.UpdatedSince, filter.After, filter.Limit = since, &after, limit+1
	states, ok := a.read(w, r, filter)
	if !ok {
		return
	}
	out := page{Items: make([]json.RawMessage, 0, min(len(states), limit))}
	if len(states) > limit {
		states = states[:limit]
		// The cursor is the last FLID listed.
		out.Cursor = encodeCursor(states[limit-1].FLID)
	}
	for _, s := range states {
		doc, err := flight.CanonicalJSON(s)
		if err != nil {
			a.log.Error(err, "render flight", "flid", s.FLID.String())
			httpError(w, http.StatusInternalServerError, "render flight %s", s.FLID)
			return
		}
		out.Items = append(out.Items, doc)
	}
	writeJSON(w, http.StatusOK, out)
}

// fromBudget takes a page of limit rows (flights, or reference records,
// which are smaller) out of the lists' budget and returns its release, or
// refuses the request (429) itself. A page larger than the whole budget
// takes all of it.
func (a *ReadAPI) fromBudget(w http.ResponseWriter, r *http.Request, limit int) (func(), bool) {
	weight := min(int64(limit), a.budget)
	if !a.flights.TryAcquire(weight) {
		a.busy(w, r, fmt.Sprintf("the lists being served by this replica read up to %d flights at once and this one asks for %d more than are left", a.budget, limit))
		return nil, false
	}
	return func() { a.flights.Release(weight) }, true
}

func (a *ReadAPI) one(w http.ResponseWriter, r *http.Request) {
	id, err := flight.ParseFLID(r.PathValue("flid"))
	if err != nil {
		httpError(w, http.StatusBadRequest, "flid: %v", err)
		return
	}
	states, ok := a.read(w, r, store.Filter{FLID: &id})
	if !ok {
		return
	}
	if len(states) == 0 {
		httpError(w, http.StatusNotFound, "flight %s not found", id)
		return
	}
	doc, err := flight.CanonicalJSON(states[0])
	if err != nil {
		a.log.Error(err, "render flight", "flid", id.String())
		httpError(w, http.StatusInternalServerError, "render flight %s", id)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(doc) // canonical JSON served as application/json with nosniff, never HTML
}

// read finds the feed and reads the flights f selects (with f.Limit, one
// page) in one consistent transaction. It writes the error response itself
// when it fails.
func (a *ReadAPI) read(w http.ResponseWriter, r *http.Request, f store.Filter) ([]flight.State, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), a.readTimeout)
	defer cancel()
	key, reader, ok := a.feedReader(ctx, w, r)
	if !ok {
		return nil, false
	}
	states, err := reader.ReadFlights(ctx, f)
	if err != nil {
		a.log.Info("read api: read flights", "flightfeed", key.String(), "error", err.Error())
		httpError(w, http.StatusServiceUnavailable, "reading %s failed", key)
		return nil, false
	}
	return states, true
}

// reader returns the feed's connection, reopened when its DSN changed.
func (a *ReadAPI) reader(ctx context.Context, key types.NamespacedName, feed *config.Feed) (FeedReader, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	dsn := readDSN(feed)
	if s, ok := a.stores[key]; ok {
		if s.dsn == dsn {
			return s.reader, nil
		}
		s.close()
		delete(a.stores, key)
	}
	reader, closeFn, err := a.open(ctx, feed)
	if err != nil {
		return nil, err
	}
	a.stores[key] = &readStore{dsn: dsn, reader: reader, close: closeFn}
	return reader, nil
}

// forget closes the connection of a feed that is gone.
func (a *ReadAPI) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.stores[key]; ok {
		s.close()
		delete(a.stores, key)
	}
}

// Cursors are opaque to clients; today they carry the last FLID listed.
func encodeCursor(id flight.FLID) string {
	return base64.RawURLEncoding.EncodeToString([]byte("flid:" + id.String()))
}

func decodeCursor(s string) (flight.FLID, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, err
	}
	const prefix = "flid:"
	if len(b) <= len(prefix) || string(b[:len(prefix)]) != prefix {
		return 0, errors.New("bad cursor")
	}
	return flight.ParseFLID(string(b[len(prefix):]))
}

type apiError struct {
	Error string `json:"error"`
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, apiError{Error: fmt.Sprintf(format, args...)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// queryDay is the query parameter name as an operation day (YYYY-MM-DD),
// "" when absent; a malformed one is answered 400 here (ok false).
func queryDay(w http.ResponseWriter, q url.Values, name string) (day string, ok bool) {
	day = q.Get(name)
	if day == "" {
		return "", true
	}
	if _, err := time.Parse(time.DateOnly, day); err != nil {
		httpError(w, http.StatusBadRequest, "%s %q: must be YYYY-MM-DD", name, day)
		return "", false
	}
	return day, true
}

// queryTime is the query parameter name as an RFC 3339 time, zero when
// absent; a malformed one is answered 400 here (ok false).
func queryTime(w http.ResponseWriter, q url.Values, name string) (t time.Time, ok bool) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		httpError(w, http.StatusBadRequest, "%s %q: must be an RFC 3339 time", name, v)
		return time.Time{}, false
	}
	return t, true
}
