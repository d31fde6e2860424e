package pumptest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
)

// Fault makes a call fail with Err: the call named (begin, prefetch,
// record, finish, writeset, commit, snapshot, trace) when it concerns message ID
// (0: any), Times times (0: always).
type Fault struct {
	Call  string
	ID    int64
	Err   error
	Times int
	hit   int
}

// Data is what the feed database holds; a transaction works on a copy
// and its commit replaces the committed one.
type Data struct {
	States map[int64]pumpdata.ProcState
	// Results are the last result written for each message (its flags
	// and identity, which ProcState does not carry).
	Results   map[int64]pumpdata.Result
	Priors    map[string]pumpdata.PriorCopy
	Archive   map[int64]pumpdata.ArchivedRow
	Backfills map[int64]pumpdata.Backfill
	Flights   map[flight.FLID]flight.State
	// Outbox are the events written, in order.
	Outbox   []engine.Event
	Requests []pumpdata.Request
	// Answers say when each completed request was answered, and by which
	// message (req_track's completed_at and completed_by).
	Answers map[int64]Answer
	// Failed are the FAILED requests no operator re-requested, by id.
	Failed  map[int64]pumpdata.FailedRequest
	Replays []pumpdata.ReplayRequest
	// Days is the day ledger (schd_gen and its roster, schd_gen_flid) by
	// operation day: what full-day snapshots keep.
	Days map[string]Day
	// History are the flights the lifecycle jobs moved out of current
	// state (flight_history), in the order they moved.
	History []HistoryRow
	// Reference are the reference-data records (ref_record) by SIS TYPE
	// and key; a transaction replaces a type's map whole when it writes it.
	Reference map[string]map[string]pumpdata.ReferenceRecord
	// Replaced says when and by which message each type's list was last
	// replaced whole, a DNLD or RESP (ref_list's replaced_at and
	// replaced_by).
	Replaced map[string]Answer
}

// Answer is how a request was completed.
type Answer struct {
	At        time.Time
	MessageID int64
}

// Day is one day of the ledger: its version, the last full-day snapshot
// committed for it, and its roster (the FLIDs of that snapshot still in
// current state).
type Day struct {
	Version       int64
	LastMessageID int64
	// LastReceivedAt is that message's received time, LastSentAt its
	// META send time (zero: unknown), LastCommitAt when it committed.
	LastReceivedAt, LastSentAt, LastCommitAt time.Time
	// Roster is sorted; it is replaced, never changed in place.
	Roster []flight.FLID
}

// HistoryRow is a flight a lifecycle job moved to history.
type HistoryRow struct {
	State      flight.State
	Reason     string
	ArchivedAt time.Time
}

func newData() Data {
	return Data{States: map[int64]pumpdata.ProcState{}, Results: map[int64]pumpdata.Result{}, Priors: map[string]pumpdata.PriorCopy{},
		Archive: map[int64]pumpdata.ArchivedRow{}, Backfills: map[int64]pumpdata.Backfill{},
		Flights: map[flight.FLID]flight.State{}, Answers: map[int64]Answer{}, Failed: map[int64]pumpdata.FailedRequest{}, Days: map[string]Day{},
		Reference: map[string]map[string]pumpdata.ReferenceRecord{}, Replaced: map[string]Answer{}}
}

func (d Data) clone() Data {
	return Data{States: maps.Clone(d.States), Results: maps.Clone(d.Results), Priors: maps.Clone(d.Priors), Archive: maps.Clone(d.Archive),
		Backfills: maps.Clone(d.Backfills), Flights: maps.Clone(d.Flights), Outbox: slices.Clone(d.Outbox),
		Requests: slices.Clone(d.Requests), Answers: maps.Clone(d.Answers), Failed: maps.Clone(d.Failed), Replays: slices.Clone(d.Replays),
		Days: maps.Clone(d.Days), History: slices.Clone(d.History), Reference: maps.Clone(d.Reference), Replaced: maps.Clone(d.Replaced)}
}

// Store is the feed's database in memory (pump.Store). A transaction's
// writes become visible at its commit; a rolled-back one leaves nothing.
type Store struct {
	// Answers reads the errors a Fault injects as the real store reads
	// the driver's (the tests inject PostgreSQL's errors).
	store.Answers
	mu    sync.Mutex
	epoch int64
	now   func() time.Time
	d     Data
	// faults are consulted, in order, at every call that can fail.
	faults  []*Fault
	pingErr error
	traces  []pumpdata.TraceEntry
	// commits lists every committed transaction's results, "id STATUS
	// REASON".
	commits  [][]string
	versions int64
	nextID   int64
	// cacheHits counts the flights a transaction took from the pump's
	// state cache (CacheHits).
	cacheHits int
}

// NewStore is an empty feed database at epoch 1 on clock now (time.Now
// when nil), failing as faults say.
func NewStore(now func() time.Time, faults ...*Fault) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{epoch: 1, now: now, d: newData(), faults: faults}
}

// Update changes the committed data (a test's setup).
func (s *Store) Update(fn func(*Data)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.d)
}

// View reads the committed data.
func (s *Store) View(fn func(Data)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.d)
}

// Fail adds faults to those the store consults.
func (s *Store) Fail(faults ...*Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, faults...)
}

// Fence makes the current epoch stale, as another pump taking over does.
func (s *Store) Fence() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
}

// SetPingErr makes Ping fail with err (nil: answer).
func (s *Store) SetPingErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pingErr = err
}

// Committed lists every committed result, "id STATUS REASON", in commit
// order.
func (s *Store) Committed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Concat(s.commits...)
}

// Commits is the number of commits that wrote results.
func (s *Store) Commits() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commits)
}

// Traces are the trace rows appended.
func (s *Store) Traces() []pumpdata.TraceEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.traces)
}

// CacheHits is how many flights transactions took from the writer's
// state cache instead of reading them.
func (s *Store) CacheHits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cacheHits
}

// RequestReplay records a PENDING replay request for message id.
func (s *Store) RequestReplay(id int64, policy string) pumpdata.ReplayRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	r := pumpdata.ReplayRequest{ID: s.nextID, MessageID: id, Policy: policy, RequestedAt: s.now(), State: pumpdata.ReplayPending}
	s.d.Replays = append(s.d.Replays, r)
	return r
}

// fail returns the error of the first fault that matches (mu held).
func (s *Store) fail(call string, ids ...int64) error {
	for _, f := range s.faults {
		if f.Call != call || (f.ID != 0 && !slices.Contains(ids, f.ID)) || (f.Times > 0 && f.hit == f.Times) {
			continue
		}
		f.hit++
		return f.Err
	}
	return nil
}

// Start takes the next epoch unless one is given, reads the newest
// request's SEQN and resolves the trace rows of commits of unknown outcome
// as the real store does (store.Store.ResolveCommitUnknown; id reuse is not
// kept here).
func (s *Store) Start(_ context.Context, _ string, epoch int64) (pump.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch == 0 {
		s.epoch++
		epoch = s.epoch
	}
	var last int
	if n := len(s.d.Requests); n > 0 {
		last = s.d.Requests[n-1].Seqn
	}
	return pump.Session{Epoch: epoch, LastSeqn: last, TracesResolved: s.resolveCommitUnknown()}, nil
}

// resolveCommitUnknown settles every COMMIT_UNKNOWN trace row (mu held):
// committed when its message is SUCCEEDED for the same received time and
// no later attempt of it was traced.
func (s *Store) resolveCommitUnknown() int {
	n := 0
	for i, e := range s.traces {
		if e.Result != pumpdata.TraceCommitUnknown {
			continue
		}
		st, ok := s.d.States[e.MessageID]
		committed := ok && st.Status == pumpdata.StatusSucceeded && st.ReceivedAt.Equal(e.ReceivedAt) &&
			!slices.ContainsFunc(s.traces[i+1:], func(l pumpdata.TraceEntry) bool {
				return l.MessageID == e.MessageID && l.ReceivedAt.Equal(e.ReceivedAt)
			})
		found := "not committed"
		e.Result = pumpdata.TraceRolledBack
		if committed {
			found, e.Result = "committed", e.IfCommitted
		}
		e.IfCommitted = ""
		e.Detail = strings.TrimPrefix(e.Detail+"; its commit failed without an answer; a later start found it "+found, "; ")
		s.traces[i] = e
		n++
	}
	return n
}

// RenewEpoch is pumpdata.ErrFenced once another epoch was taken (Fence).
func (s *Store) RenewEpoch(_ context.Context, epoch int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != s.epoch {
		return pumpdata.ErrFenced
	}
	return nil
}

// Ping answers SetPingErr's error.
func (s *Store) Ping(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pingErr
}

// Unanswered is never anything: no call of the Store waits.
func (s *Store) Unanswered() (time.Time, string) { return time.Time{}, "" }

// Begin starts a transaction on a copy of the data; it is
// pumpdata.ErrFenced once another epoch was taken.
func (s *Store) Begin(_ context.Context, epoch int64) (pump.Tx, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != s.epoch {
		return nil, fmt.Errorf("%w (mine %d, current %d)", pumpdata.ErrFenced, epoch, s.epoch)
	}
	if err := s.fail("begin"); err != nil {
		return nil, err
	}
	d := s.d.clone()
	return &tx{s: s, epoch: epoch, d: d, dirty: newDirty(), outboxFrom: len(d.Outbox), historyFrom: len(d.History),
		days: maps.Clone(s.d.Days)}, nil
}

// Backfills lists up to limit intents, lowest id first, and counts them all.
func (s *Store) Backfills(_ context.Context, limit int) ([]pumpdata.Backfill, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.SortedFunc(maps.Values(s.d.Backfills), func(a, b pumpdata.Backfill) int { return int(a.MessageID - b.MessageID) })
	return out[:min(limit, len(out))], int64(len(out)), nil
}

// SettleBackfills clears the intents of ids (cause nil) or keeps them.
func (s *Store) SettleBackfills(_ context.Context, ids []int64, cause error) error {
	if cause != nil {
		return nil // the intents stay; their attempts are not kept
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.d.Backfills, id)
	}
	return nil
}

// AppendTraceLog appends a trace row (Traces).
func (s *Store) AppendTraceLog(_ context.Context, e pumpdata.TraceEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail("trace", e.MessageID); err != nil {
		return fmt.Errorf("append trace log of message %d: %w", e.MessageID, err)
	}
	s.traces = append(s.traces, e)
	return nil
}

// Prune deletes the archived rows received before archiveBefore (trace
// rows and delivered events are not aged here).
func (s *Store) Prune(_ context.Context, _, archiveBefore, _ time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for id, a := range s.d.Archive {
		if a.ReceivedAt.Before(archiveBefore) {
			delete(s.d.Archive, id)
			n++
		}
	}
	return n, nil
}

// CurrentRequest is the committed PENDING request of kind, nil when none.
func (s *Store) CurrentRequest(_ context.Context, kind string) (*pumpdata.Request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return currentRequest(s.d, kind), nil
}

func currentRequest(d Data, kind string) *pumpdata.Request {
	for _, r := range d.Requests {
		if r.Kind == kind && r.Status == pumpdata.RequestPending {
			return &r
		}
	}
	return nil
}

// RequestSent records when request id went out.
func (s *Store) RequestSent(_ context.Context, id, _ int64, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.d.Requests {
		if s.d.Requests[i].ID == id {
			s.d.Requests[i].SentAt = at
			return nil
		}
	}
	return fmt.Errorf("mark request %d sent: no such request", id)
}

// AskedSince names the days of kind with a request sent, or answered, at
// or after since, and the days held by a FAILED request (the newest of
// the day) no operator re-requested. For pumpdata.RequestKindRQRD it
// names the reference-data lists of days (SIS TYPEs) asked for, answered
// or replaced whole at or after since (store.Store.ReferenceAskedSince).
func (s *Store) AskedSince(_ context.Context, kind string, days []string, since time.Time) (pumpdata.AskedDays, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := pumpdata.AskedDays{Asked: map[string]bool{}, Failed: map[string]pumpdata.FailedRequest{}}
	if kind == pumpdata.RequestKindRQRD {
		for _, typ := range days {
			if r, ok := s.d.Replaced[typ]; ok && !r.At.Before(since) {
				out.Asked[typ] = true
			}
		}
		for _, r := range s.d.Requests {
			typ, ok := pumpdata.ReferenceRequestType(r.Kind)
			if !ok || !slices.Contains(days, typ) {
				continue
			}
			if (!r.SentAt.IsZero() && !r.SentAt.Before(since)) ||
				(r.Status == pumpdata.RequestCompleted && !s.d.Answers[r.ID].At.Before(since)) {
				out.Asked[typ] = true
			}
		}
		return out, nil
	}
	for _, r := range s.d.Requests { // ascending ids: the newest failed one wins
		if r.Kind != kind || !slices.Contains(days, r.Day) {
			continue
		}
		sent := !r.SentAt.IsZero() && !r.SentAt.Before(since)
		answered := r.Status == pumpdata.RequestCompleted && !s.d.Answers[r.ID].At.Before(since)
		if sent || answered {
			out.Asked[r.Day] = true
		}
		if f, ok := s.d.Failed[r.ID]; ok {
			out.Failed[r.Day] = f
		}
	}
	return out, nil
}

// ReleaseFailedRequests is an operator's re-request of day: its FAILED
// requests of kind are released (store.Store.ReleaseFailedRequests).
func (s *Store) ReleaseFailedRequests(kind, day string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, r := range s.d.Requests {
		if _, ok := s.d.Failed[r.ID]; ok && r.Kind == kind && r.Day == day {
			delete(s.d.Failed, r.ID)
			n++
		}
	}
	return n
}

// PendingReplays lists up to limit PENDING replay requests, oldest first.
func (s *Store) PendingReplays(_ context.Context, limit int) ([]pumpdata.ReplayRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []pumpdata.ReplayRequest
	for _, r := range s.d.Replays {
		if r.State == pumpdata.ReplayPending && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

var _ pump.Store = (*Store)(nil)

// resultLine is how a committed result is listed (Committed).
func resultLine(r pumpdata.Result) string {
	return strings.TrimSpace(fmt.Sprintf("%d %s %s", r.MessageID, r.Status, r.Reason))
}
