package pumptest

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// tx is a transaction of a Store, or a savepoint in one (parent set): it
// works on a copy of the data, which its commit hands to the store or to
// its parent.
type tx struct {
	s      *Store
	parent *tx
	epoch  int64
	d      Data
	// dirty names what the transaction wrote: its commit copies only that
	// into the store, so writes made outside it meanwhile (a write-back
	// clearing intents, a request marked sent) are not undone.
	dirty dirty
	// outboxFrom and historyFrom are how many outbox and history rows the
	// copy started with.
	outboxFrom, historyFrom int
	// days is the ledger as the transaction began (set on the outermost
	// one): a snapshot's compare-and-set on a day's version fails when
	// another transaction committed that day since.
	days map[string]Day
	// results are the results written, for the store's commit log.
	results []pumpdata.Result
}

type dirty struct {
	states, archive, backfills, requests, replays map[int64]bool
	priors, days, reference                       map[string]bool
	flights                                       map[flight.FLID]bool
}

func newDirty() dirty {
	return dirty{states: map[int64]bool{}, archive: map[int64]bool{}, backfills: map[int64]bool{}, requests: map[int64]bool{},
		replays: map[int64]bool{}, priors: map[string]bool{}, days: map[string]bool{}, reference: map[string]bool{},
		flights: map[flight.FLID]bool{}}
}

func (d dirty) merge(o dirty) {
	maps.Copy(d.states, o.states)
	maps.Copy(d.archive, o.archive)
	maps.Copy(d.backfills, o.backfills)
	maps.Copy(d.requests, o.requests)
	maps.Copy(d.replays, o.replays)
	maps.Copy(d.priors, o.priors)
	maps.Copy(d.days, o.days)
	maps.Copy(d.reference, o.reference)
	maps.Copy(d.flights, o.flights)
}

// copyKeys makes dst hold what src holds for keys (deleting what src does
// not hold).
func copyKeys[K comparable, V any](dst, src map[K]V, keys map[K]bool) {
	for k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		} else {
			delete(dst, k)
		}
	}
}

// copyByID makes dst hold src's items with ids (appending new ones).
func copyByID[T any](dst, src []T, ids map[int64]bool, id func(T) int64) []T {
	for _, item := range src {
		if !ids[id(item)] {
			continue
		}
		i := slices.IndexFunc(dst, func(x T) bool { return id(x) == id(item) })
		if i < 0 {
			dst = append(dst, item)
		} else {
			dst[i] = item
		}
	}
	return dst
}

// apply writes what t changed into d (the store's committed data).
func (t *tx) apply(d *Data) {
	copyKeys(d.States, t.d.States, t.dirty.states)
	copyKeys(d.Results, t.d.Results, t.dirty.states)
	copyKeys(d.Archive, t.d.Archive, t.dirty.archive)
	copyKeys(d.Backfills, t.d.Backfills, t.dirty.backfills)
	copyKeys(d.Priors, t.d.Priors, t.dirty.priors)
	copyKeys(d.Flights, t.d.Flights, t.dirty.flights)
	copyKeys(d.Answers, t.d.Answers, t.dirty.requests)
	copyKeys(d.Failed, t.d.Failed, t.dirty.requests)
	copyKeys(d.Days, t.d.Days, t.dirty.days)
	copyKeys(d.Reference, t.d.Reference, t.dirty.reference)
	copyKeys(d.Replaced, t.d.Replaced, t.dirty.reference)
	d.Requests = copyByID(d.Requests, t.d.Requests, t.dirty.requests, func(r pumpdata.Request) int64 { return r.ID })
	d.Replays = copyByID(d.Replays, t.d.Replays, t.dirty.replays, func(r pumpdata.ReplayRequest) int64 { return r.ID })
	d.Outbox = append(d.Outbox, t.d.Outbox[t.outboxFrom:]...)
	d.History = append(d.History, t.d.History[t.historyFrom:]...)
}

func (t *tx) lock() func() {
	t.s.mu.Lock()
	return t.s.mu.Unlock
}

func (t *tx) CurrentRequest(_ context.Context, kind string) (*pumpdata.Request, error) {
	return currentRequest(t.d, kind), nil
}

func (t *tx) Savepoint(context.Context) (pump.Tx, error) {
	return &tx{s: t.s, parent: t, epoch: t.epoch, d: t.d.clone(), dirty: newDirty(), outboxFrom: len(t.d.Outbox),
		historyFrom: len(t.d.History)}, nil
}

func (t *tx) Commit(context.Context) error {
	if t.parent != nil {
		t.parent.d = t.d
		t.parent.dirty.merge(t.dirty)
		t.parent.results = append(t.parent.results, t.results...)
		return nil
	}
	defer t.lock()()
	s := t.s
	ids := make([]int64, len(t.results))
	for i, r := range t.results {
		ids[i] = r.MessageID
	}
	if err := s.fail("commit", ids...); err != nil {
		return err
	}
	if t.epoch != s.epoch {
		return fmt.Errorf("commit: %w", pumpdata.ErrFenced)
	}
	t.apply(&s.d)
	if len(t.results) > 0 {
		lines := make([]string, len(t.results))
		for i, r := range t.results {
			lines[i] = resultLine(r)
		}
		s.commits = append(s.commits, lines)
	}
	t.results, t.d = nil, Data{}
	return nil
}

func (t *tx) Rollback(context.Context) error {
	t.results = nil
	return nil
}

func (t *tx) Prefetch(_ context.Context, req pumpdata.PrefetchRequest) (*pumpdata.Prefetched, error) {
	defer t.lock()()
	if err := t.s.fail("prefetch", req.MessageIDs...); err != nil {
		return nil, err
	}
	out := &pumpdata.Prefetched{States: map[int64]pumpdata.ProcState{}, Priors: map[string]pumpdata.PriorCopy{}}
	for _, id := range req.MessageIDs {
		if st, ok := t.d.States[id]; ok {
			out.States[id] = st
		}
	}
	for _, k := range req.IdentityKeys {
		if p, ok := t.d.Priors[k]; ok && !p.ReceivedAt.Before(req.Since) {
			out.Priors[k] = p
		}
	}
	// A flight in the writer's cache whose version is still the stored
	// one is taken from the cache, as the real store does (a version
	// names one content); any other is read.
	states := map[flight.FLID]flight.State{}
	for _, f := range req.FLIDs {
		s, ok := t.d.Flights[f]
		if !ok {
			continue
		}
		if c, hit := req.Cache.Lookup(f); hit && c.StateVersion == s.StateVersion {
			s = c
			t.s.cacheHits++
		}
		states[f] = s
	}
	out.Set = engine.NewWorkingSet(req.FLIDs, states, t.s.takeVersions(req.Versions), t.s.now())
	return out, nil
}

// takeVersions takes n state versions from the store's sequence (mu
// held): like a database sequence, a rolled-back transaction does not
// give them back.
func (s *Store) takeVersions(n int) []int64 {
	versions := make([]int64, n)
	for i := range versions {
		s.versions++
		versions[i] = s.versions
	}
	return versions
}

// Write writes w as the real store does, with its faults: "record" for
// one result alone, "writeset" for a working set alone, "finish" for the
// rest.
func (t *tx) Write(_ context.Context, w pump.Writes) error {
	for _, r := range w.Reused {
		delete(t.d.States, r.MessageID)
		delete(t.d.Results, r.MessageID)
		delete(t.d.Archive, r.MessageID)
		delete(t.d.Backfills, r.MessageID)
		t.dirty.states[r.MessageID], t.dirty.archive[r.MessageID], t.dirty.backfills[r.MessageID] = true, true, true
	}
	ids := make([]int64, len(w.Results))
	for i, r := range w.Results {
		ids[i] = r.MessageID
	}
	call := "finish"
	switch {
	case len(w.Archive) == 0 && w.Set == nil && len(w.Results) == 1:
		call = "record"
	case len(w.Archive) == 0 && len(w.Results) == 0 && w.Set != nil:
		call = "writeset"
	}
	unlock := t.lock()
	err := t.s.fail(call, ids...)
	unlock()
	if err != nil {
		return err
	}
	for _, a := range w.Archive {
		if _, ok := t.d.Archive[a.MessageID]; ok && a.New {
			return fmt.Errorf("finish batch: archive of message %d: %w", a.MessageID, pumpdata.ErrNotNew)
		}
	}
	for _, r := range w.Results {
		if _, ok := t.d.States[r.MessageID]; ok && r.New {
			return fmt.Errorf("finish batch: result of message %d: %w", r.MessageID, pumpdata.ErrNotNew)
		}
	}
	for _, c := range w.Reference {
		t.applyReference(c)
	}
	for _, a := range w.Archive {
		if _, ok := t.d.Archive[a.MessageID]; !ok {
			t.d.Archive[a.MessageID] = a
			t.dirty.archive[a.MessageID] = true
		}
	}
	for _, r := range w.Results {
		t.record(r)
	}
	if w.Set != nil {
		p := w.Set.Pending()
		for _, f := range p.Gone {
			delete(t.d.Flights, f)
			t.dirty.flights[f] = true
		}
		t.leaveRosters(p.Gone)
		for _, wr := range p.Writes {
			t.d.Flights[wr.Next.FLID] = wr.Next
			t.dirty.flights[wr.Next.FLID] = true
		}
		t.d.Outbox = append(t.d.Outbox, p.Events...)
		w.Set.Written()
	}
	if w.Replay != nil {
		return t.finishReplay(*w.Replay, w.ReplayNote)
	}
	return nil
}

// record writes a result's processing state and, when terminal, its
// backfill intent and its identity's prior copy; attempts add up
// (Result.Attempts).
func (t *tx) record(r pumpdata.Result) {
	prior, known := t.d.States[r.MessageID]
	if known && r.Status == pumpdata.StatusFailed && (prior.Terminal() || !prior.ReceivedAt.Equal(r.ReceivedAt)) {
		return // a FAILED never replaces a terminal state or another message's (store.Tx.RecordResult)
	}
	st := pumpdata.ProcState{Status: r.Status, Reason: r.Reason, Note: r.Note, Attempts: max(r.Attempts, 1),
		Finished: t.s.now(), ReceivedAt: r.ReceivedAt, Digest: r.PayloadDigest}
	if known {
		st.Attempts += prior.Attempts
	}
	t.d.States[r.MessageID] = st
	t.d.Results[r.MessageID] = r
	t.dirty.states[r.MessageID] = true
	if st.Terminal() {
		t.dirty.backfills[r.MessageID] = true
		t.d.Backfills[r.MessageID] = pumpdata.Backfill{MessageID: r.MessageID, Result: r.Status, Note: r.Note,
			Processed: t.s.now(), Received: r.ReceivedAt}
		if r.Status != pumpdata.StatusSkipped && r.IdentityKey != "" {
			t.dirty.priors[r.IdentityKey] = true
			t.d.Priors[r.IdentityKey] = pumpdata.PriorCopy{MessageID: r.MessageID, Digest: r.ContentDigest, ReceivedAt: r.ReceivedAt}
		}
	}
	t.results = append(t.results, r)
}

func (t *tx) finishReplay(req pumpdata.ReplayRequest, note string) error {
	for i, r := range t.d.Replays {
		if r.ID != req.ID {
			continue
		}
		if r.State != pumpdata.ReplayPending {
			break
		}
		now := t.s.now()
		req.FinishedAt = &now
		t.d.Replays[i] = req
		t.dirty.replays[req.ID] = true
		if req.State == pumpdata.ReplayDone {
			t.dirty.states[req.MessageID], t.dirty.backfills[req.MessageID] = true, true
			st := t.d.States[req.MessageID]
			st.Note = note
			t.d.States[req.MessageID] = st
			t.d.Backfills[req.MessageID] = pumpdata.Backfill{MessageID: req.MessageID, Result: st.Status, Note: note,
				Processed: now, Received: st.ReceivedAt}
		}
		return nil
	}
	return fmt.Errorf("finish replay request %d: it is no longer pending", req.ID)
}

func (t *tx) RequestedBefore(_ context.Context, kind, day, receiver string) (bool, error) {
	for _, r := range t.d.Requests {
		if r.Kind == kind && r.Day == day && !r.SentAt.IsZero() && (r.Receiver == "" || r.Receiver == receiver) {
			return true, nil
		}
	}
	return false, nil
}

func (t *tx) OpenRequest(_ context.Context, kind, day, receiver, _, _, _ string, seqn int) (*pumpdata.Request, error) {
	for i, r := range t.d.Requests {
		if r.Kind == kind && r.Status == pumpdata.RequestPending {
			t.d.Requests[i].Status = pumpdata.RequestExpired
			t.dirty.requests[r.ID] = true
		}
	}
	defer t.lock()()
	t.s.nextID++
	r := pumpdata.Request{ID: t.s.nextID, Kind: kind, Day: day, Receiver: receiver, Seqn: seqn,
		Status: pumpdata.RequestPending, RequestedAt: t.s.now()}
	// A re-ask carries the refusals in a row of the day's newest request
	// when that one ended unanswered (store.Tx.OpenRequest).
	for _, prev := range slices.Backward(t.d.Requests) {
		if prev.Kind == kind && prev.Day == day {
			if prev.Status == pumpdata.RequestTimedOut || prev.Status == pumpdata.RequestExpired {
				r.Rejections, r.Rejection = prev.Rejections, prev.Rejection
			}
			break
		}
	}
	t.d.Requests = append(t.d.Requests, r)
	t.dirty.requests[r.ID] = true
	return &r, nil
}

// SettleRequest ends or updates pending request id; a completed one
// keeps when and by which message it was answered.
func (t *tx) SettleRequest(_ context.Context, id int64, s pumpdata.RequestSettlement) error {
	switch s.Status {
	case pumpdata.RequestCompleted, pumpdata.RequestTimedOut:
	case pumpdata.RequestPending, pumpdata.RequestFailed:
		if s.Rejection == "" || s.Rejections < 1 {
			return fmt.Errorf("settle request %d %s: no refusal given", id, s.Status)
		}
	default:
		return fmt.Errorf("settle request %d: %q is no outcome of a request", id, s.Status)
	}
	for i, r := range t.d.Requests {
		if r.ID != id || r.Status != pumpdata.RequestPending {
			continue
		}
		t.d.Requests[i].Status = s.Status
		t.dirty.requests[id] = true
		unlock := t.lock()
		now := t.s.now()
		unlock()
		switch s.Status {
		case pumpdata.RequestCompleted:
			t.d.Answers[id] = Answer{At: now, MessageID: s.MessageID}
		case pumpdata.RequestPending, pumpdata.RequestFailed:
			t.d.Requests[i].Rejections, t.d.Requests[i].Rejection = s.Rejections, s.Rejection
			if s.Status == pumpdata.RequestFailed {
				t.d.Failed[id] = pumpdata.FailedRequest{Day: r.Day, Rejection: s.Rejection, MessageID: s.MessageID, FailedAt: now}
			}
		}
	}
	return nil
}

func (t *tx) ReplaySource(_ context.Context, id int64) (pumpdata.ReplaySource, error) {
	st, ok := t.d.States[id]
	if !ok {
		return pumpdata.ReplaySource{}, fmt.Errorf("replay source of message %d: no processing state", id)
	}
	src := pumpdata.ReplaySource{ReceivedAt: st.ReceivedAt, State: st}
	if a, ok := t.d.Archive[id]; ok {
		src.Archived, src.Body, src.Truncated = true, a.Body, a.Truncated
	}
	return src, nil
}

var _ pump.Tx = (*tx)(nil)

// applyReference writes one reference-data change as store.ApplyReference
// does: a record repeated unchanged keeps the message that last changed it.
func (t *tx) applyReference(c pumpdata.ReferenceChange) {
	list := maps.Clone(t.d.Reference[c.Type])
	if list == nil {
		list = map[string]pumpdata.ReferenceRecord{}
	}
	now := t.s.now().UTC()
	if c.Op == pumpdata.RefReplace {
		for k := range list {
			if !slices.Contains(c.Keys, k) {
				delete(list, k)
			}
		}
	}
	for i, k := range c.Keys {
		if c.Op == pumpdata.RefDelete {
			delete(list, k)
			continue
		}
		if old, ok := list[k]; ok && string(old.Doc) == string(c.Docs[i]) {
			continue
		}
		list[k] = pumpdata.ReferenceRecord{Type: c.Type, Key: k, Doc: c.Docs[i], MessageID: c.MessageID, UpdatedAt: now}
	}
	t.d.Reference[c.Type] = list
	if c.Op == pumpdata.RefReplace {
		t.d.Replaced[c.Type] = Answer{At: now, MessageID: c.MessageID}
	}
	t.dirty.reference[c.Type] = true
}
