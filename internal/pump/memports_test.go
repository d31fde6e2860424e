package pump_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// The pump's ports in memory: a mailbox (memInbox) and a feed database
// (memStore), so the loop, its batches and its failure handling can be
// tested without services, beside the tests against the real ones.

// memInbox is a mailbox in memory (pump.Inbox): its head rule is the
// mailbox's (FIFO, skip, bodies within the budget, a fresh read takes its
// first row whatever its size), and it records every read.
type memInbox struct {
	mu       sync.Mutex
	rows     []mailbox.Row
	results  map[int64]mailbox.Result
	reads    []headRead
	failBack int // write-backs still to refuse
	// backs lists the ids of every write-back that landed, in order.
	backs [][]int64
}

type headRead struct {
	budget  int64
	skipped int64 // body bytes of the batch being applied (skip)
	read    int64 // body bytes returned
	rows    int
}

func (m *memInbox) Head(_ context.Context, limit int, budget, maxBytes int64, skip map[int64]bool) ([]mailbox.Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := headRead{budget: budget}
	var out []mailbox.Row
	var total int64
	for _, r := range m.rows {
		if _, done := m.results[r.ID]; done {
			continue
		}
		if skip[r.ID] {
			rec.skipped += min(r.Size, maxBytes)
			continue
		}
		if len(out) == limit {
			break
		}
		fetch := min(r.Size, maxBytes)
		if (len(out) > 0 || len(skip) > 0) && total+fetch > budget {
			break
		}
		total += fetch
		out = append(out, r)
	}
	rec.read, rec.rows = total, len(out)
	m.reads = append(m.reads, rec)
	return out, nil
}

func (m *memInbox) Backfill(_ context.Context, results []mailbox.Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failBack > 0 {
		m.failBack--
		return fmt.Errorf("write-back refused")
	}
	ids := make([]int64, len(results))
	for i, r := range results {
		m.results[r.ID] = r
		ids[i] = r.ID
	}
	m.backs = append(m.backs, ids)
	return nil
}

func (m *memInbox) Depth(context.Context) (int64, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	var oldest time.Time
	for _, r := range m.rows {
		if _, done := m.results[r.ID]; !done {
			if n == 0 {
				oldest = r.Received
			}
			n++
		}
	}
	return n, oldest, nil
}

func (m *memInbox) SendRequest(context.Context, string, []byte, time.Time) (int64, error) {
	return 0, nil
}
func (m *memInbox) FindRequest(context.Context, string, string, time.Time) (int64, bool, error) {
	return 0, false, nil
}
func (m *memInbox) Close() error { return nil }

// memStore is the feed's database in memory (pump.Store): processing
// states, backfill intents, trace rows and the fencing epoch, with faults
// to inject. A transaction's results become visible at its commit, in
// the order written; a rolled-back one leaves nothing. It keeps no
// flights: every working set starts from none, which the results and the
// control flow tested here do not depend on.
type memStore struct {
	mu        sync.Mutex
	epoch     int64
	states    map[int64]pumpdata.ProcState
	priors    map[string]pumpdata.PriorCopy
	backfills map[int64]pumpdata.Backfill
	traces    []pumpdata.TraceEntry
	// commits lists every committed transaction's results, "id STATUS".
	commits  [][]string
	versions int64
	// faults are consulted, in order, at every call that can fail.
	faults  []*fault
	pingErr error
}

// fault makes a call fail with err: the call named (begin, prefetch,
// finish, commit, record, snapshot) when it concerns message id (0: any),
// times times (0: always).
type fault struct {
	call  string
	id    int64
	err   error
	times int
	hit   int
}

func newMemStore(faults ...*fault) *memStore {
	return &memStore{epoch: 1, states: map[int64]pumpdata.ProcState{}, priors: map[string]pumpdata.PriorCopy{},
		backfills: map[int64]pumpdata.Backfill{}, faults: faults}
}

// fail returns the error of the first fault that matches (mu held).
func (s *memStore) fail(call string, ids ...int64) error {
	for _, f := range s.faults {
		if f.call != call || (f.id != 0 && !slices.Contains(ids, f.id)) || (f.times > 0 && f.hit == f.times) {
			continue
		}
		f.hit++
		return f.err
	}
	return nil
}

func (s *memStore) Begin(_ context.Context, epoch int64) (pump.Tx, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != s.epoch {
		return nil, fmt.Errorf("%w (mine %d, current %d)", pumpdata.ErrFenced, epoch, s.epoch)
	}
	if err := s.fail("begin"); err != nil {
		return nil, err
	}
	return &memTx{s: s}, nil
}

func (s *memStore) TakeEpoch(context.Context, string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	return s.epoch, nil
}

func (s *memStore) LastSeqn(context.Context) (int, error) { return 0, nil }

func (s *memStore) RenewEpoch(_ context.Context, epoch int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != s.epoch {
		return pumpdata.ErrFenced
	}
	return nil
}

func (s *memStore) Ping(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pingErr
}

func (s *memStore) PendingBackfills(_ context.Context, limit int) ([]pumpdata.Backfill, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []pumpdata.Backfill
	for _, b := range s.backfills {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b pumpdata.Backfill) int { return int(a.MessageID - b.MessageID) })
	return out[:min(limit, len(out))], nil
}

func (s *memStore) BackfillDone(_ context.Context, ids []int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.backfills, id)
	}
	return nil
}

func (s *memStore) BackfillFailed(context.Context, []int64, error) error { return nil }

func (s *memStore) CountBackfills(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.backfills)), nil
}

func (s *memStore) AppendTraceLog(_ context.Context, e pumpdata.TraceEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.traces = append(s.traces, e)
	return nil
}

func (s *memStore) Prune(context.Context, time.Time, time.Time, time.Time) (int64, error) {
	return 0, nil
}

func (s *memStore) PendingReplays(context.Context, int) ([]pumpdata.ReplayRequest, error) {
	return nil, nil
}

func (s *memStore) CurrentRequest(context.Context, string) (*pumpdata.Request, error) {
	return nil, nil
}

func (s *memStore) AskedSince(context.Context, string, []string, time.Time) (map[string]bool, error) {
	return nil, nil
}

func (s *memStore) RequestSent(context.Context, int64, int64, time.Time) error {
	return errNotInMemory
}

// errNotInMemory: full-day requests are not kept in memory (their tests
// run against the real store).
var errNotInMemory = errors.New("memStore: requests are not kept in memory")

// committed lists every committed result, in commit order.
func (s *memStore) committed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Concat(s.commits...)
}

// memTx is a transaction of a memStore: its writes wait for Commit.
type memTx struct {
	s       *memStore
	results []pumpdata.Result
	retired []int64
}

func (t *memTx) Savepoint(context.Context) (pump.Savepoint, error) { return memSavepoint{t}, nil }

func (t *memTx) Commit(context.Context) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, len(t.results))
	for i, r := range t.results {
		ids[i] = r.MessageID
	}
	if err := s.fail("commit", ids...); err != nil {
		return err
	}
	for _, id := range t.retired {
		delete(s.states, id)
	}
	var commit []string
	for _, r := range t.results {
		prior, known := s.states[r.MessageID]
		st := pumpdata.ProcState{Status: r.Status, Reason: r.Reason, Note: r.Note, Attempts: 1, ReceivedAt: r.ReceivedAt, Digest: r.PayloadDigest}
		if known {
			st.Attempts = prior.Attempts + 1
		}
		s.states[r.MessageID] = st
		if st.Terminal() {
			s.backfills[r.MessageID] = pumpdata.Backfill{MessageID: r.MessageID, Result: r.Status, Note: r.Note, Received: r.ReceivedAt}
			if r.Status != pumpdata.StatusSkipped && r.IdentityKey != "" {
				s.priors[r.IdentityKey] = pumpdata.PriorCopy{MessageID: r.MessageID, Digest: r.PayloadDigest, ReceivedAt: r.ReceivedAt}
			}
		}
		commit = append(commit, strings.TrimSpace(fmt.Sprintf("%d %s %s", r.MessageID, r.Status, r.Reason)))
	}
	if len(commit) > 0 {
		s.commits = append(s.commits, commit)
	}
	t.results = nil
	return nil
}

func (t *memTx) Rollback(context.Context) error {
	t.results, t.retired = nil, nil
	return nil
}

func (t *memTx) Prefetch(_ context.Context, req pumpdata.PrefetchRequest) (*pumpdata.Prefetched, error) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail("prefetch", req.MessageIDs...); err != nil {
		return nil, err
	}
	out := &pumpdata.Prefetched{States: map[int64]pumpdata.ProcState{}, Priors: map[string]pumpdata.PriorCopy{}}
	for _, id := range req.MessageIDs {
		if st, ok := s.states[id]; ok {
			out.States[id] = st
		}
	}
	for _, k := range req.IdentityKeys {
		if p, ok := s.priors[k]; ok && !p.ReceivedAt.Before(req.Since) {
			out.Priors[k] = p
		}
	}
	out.Set = s.newSet(req.FLIDs, req.Versions)
	return out, nil
}

// newSet is a working set over no flights with n fresh versions (mu held).
func (s *memStore) newSet(flids []flight.FLID, n int) *engine.WorkingSet {
	versions := make([]int64, n)
	for i := range versions {
		s.versions++
		versions[i] = s.versions
	}
	return engine.NewWorkingSet(flids, nil, versions, testNow)
}

func (t *memTx) LoadSet(_ context.Context, flids []flight.FLID, versions int, _ *pumpdata.StateCache) (*engine.WorkingSet, error) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.s.newSet(flids, versions), nil
}

func (t *memTx) WriteSet(context.Context, *engine.WorkingSet) error { return nil }

func (t *memTx) RetireReusedIDs(_ context.Context, reused []pumpdata.ReusedID) error {
	for _, r := range reused {
		t.retired = append(t.retired, r.MessageID)
	}
	return nil
}

func (t *memTx) FinishBatch(_ context.Context, _ []pumpdata.ArchivedRow, _ *engine.WorkingSet, results []pumpdata.Result) error {
	ids := make([]int64, len(results))
	for i, r := range results {
		ids[i] = r.MessageID
	}
	t.s.mu.Lock()
	err := t.s.fail("finish", ids...)
	t.s.mu.Unlock()
	if err != nil {
		return err
	}
	t.results = append(t.results, results...)
	return nil
}

func (t *memTx) RecordResult(_ context.Context, r pumpdata.Result) error {
	t.s.mu.Lock()
	err := t.s.fail("record", r.MessageID)
	t.s.mu.Unlock()
	if err != nil {
		return err
	}
	t.results = append(t.results, r)
	return nil
}

func (t *memTx) OpenRequest(context.Context, string, string, string, string, string, string, int) (*pumpdata.Request, error) {
	return nil, errNotInMemory
}

func (t *memTx) TimeOutRequest(context.Context, int64) error { return errNotInMemory }

func (t *memTx) SweepHistory(context.Context, engine.Meta, pumpdata.HistoryCutoffs, int) (int, error) {
	return 0, nil
}

func (t *memTx) SweepNullDay(context.Context, engine.Meta, time.Time, int) (int, error) {
	return 0, nil
}

func (t *memTx) PruneLedger(context.Context, string) ([]string, error) { return nil, nil }

func (t *memTx) ReplaySource(context.Context, int64) (pumpdata.ReplaySource, error) {
	return pumpdata.ReplaySource{}, errNotInMemory
}

func (t *memTx) FinishReplay(context.Context, pumpdata.ReplayRequest, string) error {
	return errNotInMemory
}

// memSavepoint is a snapshot's savepoint: a snapshot changes no flights
// here; its apply can fail (fault "snapshot").
type memSavepoint struct{ tx *memTx }

func (sp memSavepoint) Commit(context.Context) error   { return nil }
func (sp memSavepoint) Rollback(context.Context) error { return nil }

func (sp memSavepoint) PendingRequest(context.Context, string) (*pumpdata.Request, error) {
	return nil, nil
}

func (sp memSavepoint) RequestedBefore(context.Context, string, string, string) (bool, error) {
	return false, nil
}

func (sp memSavepoint) ApplySnapshot(_ context.Context, meta engine.Meta, _ pumpdata.Snapshot) (pumpdata.SnapshotEffect, error) {
	sp.tx.s.mu.Lock()
	defer sp.tx.s.mu.Unlock()
	return pumpdata.SnapshotEffect{}, sp.tx.s.fail("snapshot", meta.MessageID)
}

func (sp memSavepoint) CompleteRequest(context.Context, int64, int64) error { return nil }

var _ pump.Store = (*memStore)(nil)

// Unanswered: a call of the in-memory store is never left waiting.
func (*memStore) Unanswered() (time.Time, string) { return time.Time{}, "" }
