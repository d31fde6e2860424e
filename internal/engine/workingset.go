package engine

import (
	"fmt"
	"iter"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// WorkingSet applies a run of increment and delete messages in memory, so
// that the store writes their combined effect at once and a batch of
// messages costs a constant number of round trips. Each message is decided
// before anything is written: a message the engine refuses changes nothing
// in the set, so per-message atomicity holds without a savepoint each.
// The flights a run touches must be loaded up front (the store's Prefetch,
// or LoadSet when a snapshot changed the database under the set). A set
// is data: the store writes what Pending holds, then calls Written.
type WorkingSet struct {
	// base is the database state at load; cur the state now (nil: deleted).
	base     map[flight.FLID]flight.State
	cur      map[flight.FLID]*flight.State
	loaded   map[flight.FLID]bool
	order    []flight.FLID
	recycled map[flight.FLID]bool // deleted in this set, present in the database
	// changed holds, per flight changed in the set, the tags its messages
	// changed (a superset of what differs from base: a field changed and
	// changed back is rewritten, harmlessly).
	changed  map[flight.FLID][]string
	versions []int64
	events   []Event
	// now stamps the states the set changes (the transaction's time).
	now time.Time
}

// NewWorkingSet starts a set over flids whose current states are states
// (a FLID without a state does not exist), with versions as its pool of
// state versions, ascending, and now as the transaction's time. The store
// reads these from the database; a store in memory gives its own.
func NewWorkingSet(flids []flight.FLID, states map[flight.FLID]flight.State, versions []int64, now time.Time) *WorkingSet {
	w := &WorkingSet{base: states, cur: map[flight.FLID]*flight.State{}, changed: map[flight.FLID][]string{},
		loaded: make(map[flight.FLID]bool, len(flids)), recycled: map[flight.FLID]bool{}, versions: versions, now: now}
	if w.base == nil {
		w.base = map[flight.FLID]flight.State{}
	}
	for _, f := range flids {
		w.loaded[f] = true
	}
	return w
}

func (w *WorkingSet) touch(f flight.FLID) {
	for _, o := range w.order {
		if o == f {
			return
		}
	}
	w.order = append(w.order, f)
}

func (w *WorkingSet) version() (int64, error) {
	if len(w.versions) == 0 {
		return 0, fmt.Errorf("working set: state versions exhausted (prefetch too few)")
	}
	v := w.versions[0]
	w.versions = w.versions[1:]
	return v, nil
}

func (w *WorkingSet) current(f flight.FLID) (flight.State, bool, error) {
	if !w.loaded[f] {
		return flight.State{}, false, fmt.Errorf("working set: flight %s was not prefetched", f)
	}
	if s, ok := w.cur[f]; ok {
		if s == nil {
			return flight.State{}, false, nil
		}
		return *s, true, nil
	}
	s, ok := w.base[f]
	return s, ok, nil
}

// Increment merges increment records (FLOP, ADFT) into the set, in memory
// (processing rules R6.1): absent fields are kept, the operation day is kept (NULL
// for a flight it creates), each changed record gets a new state_version
// and its outbox event (notice and state; the set writes the state of a
// flight's newest version only). Records for one FLID apply in order. On
// error nothing of the message is kept.
func (w *WorkingSet) Increment(meta Meta, records []flight.Commands) (IncrementEffect, error) {
	out := IncrementEffect{Versions: map[flight.FLID]int64{}}
	staged := map[flight.FLID]*flight.State{}
	// The message's events go straight onto the set's, and its changed
	// records are listed in order; on error both are dropped.
	events := len(w.events)
	type stagedChange struct {
		flid    flight.FLID
		changed []string
	}
	var changes []stagedChange
	for _, r := range records {
		if r.Full {
			w.dropEvents(events)
			return IncrementEffect{}, fmt.Errorf("message %d: flight %s: a full record is not an increment", meta.MessageID, r.FLID)
		}
		tags, changed, err := w.increment(meta, r, staged, &out)
		if err != nil {
			w.dropEvents(events)
			return IncrementEffect{}, err
		}
		if changed {
			changes = append(changes, stagedChange{r.FLID, tags})
		}
	}
	for _, c := range changes {
		f := c.flid
		w.cur[f] = staged[f]
		// The tags are the merge's own slice: taken as they are when the
		// flight has none yet (appending later writes only past them).
		if old, ok := w.changed[f]; ok {
			w.changed[f] = append(old, c.changed...)
		} else {
			w.changed[f] = c.changed
		}
		w.touch(f)
	}
	out.States = staged
	return out, nil
}

// dropEvents drops the events from the n-th on: a refused message's.
func (w *WorkingSet) dropEvents(n int) {
	clear(w.events[n:]) // no document stays reachable
	if w.events = w.events[:n]; n == 0 {
		w.events = nil
	}
}

// increment merges one record of a message into what the message staged
// so far (staged, its effect out) and appends its event to the set's;
// it returns the tags the record changed and whether it is a write (a
// flight it creates is one, even with no field set).
func (w *WorkingSet) increment(meta Meta, r flight.Commands, staged map[flight.FLID]*flight.State, out *IncrementEffect) ([]string, bool, error) {
	cur, exists, err := w.current(r.FLID)
	if err != nil {
		return nil, false, err
	}
	if s, ok := staged[r.FLID]; ok {
		cur, exists = *s, true
	}
	wr, changed, err := Merge(cur, exists, r)
	if err != nil {
		return nil, false, fmt.Errorf("message %d: %w", meta.MessageID, err)
	}
	if !changed {
		out.Unchanged++
		return nil, false, nil
	}
	if !exists {
		out.Created = append(out.Created, r.FLID)
	}
	next := &wr.Next
	staged[r.FLID] = next
	// Every changed record is its own version and notice, as the
	// message's records apply in order.
	v, err := w.version()
	if err != nil {
		return nil, false, err
	}
	next.StateVersion, next.LastMessageID, next.UpdatedAt = v, meta.MessageID, w.now
	ev, err := upsertEvent(next, wr.Changed, wr.Diff, meta)
	if err != nil {
		return nil, false, err
	}
	w.events = append(w.events, ev)
	out.Versions[r.FLID] = v
	return wr.Changed, true, nil
}

// Delete ends flight instances (FDEL, processing rules R6.2) in the set, in
// memory: once written, the main row and all child rows are gone, the FLID
// has left its day's roster and a tombstone with a fresh state_version is
// queued. A missing FLID is an idempotent success. The day's generation and
// version are untouched. On error nothing of the message is kept.
func (w *WorkingSet) Delete(meta Meta, flids []flight.FLID) (DeleteEffect, error) {
	out := DeleteEffect{Versions: map[flight.FLID]int64{}}
	seen := map[flight.FLID]bool{}
	// Decide every FLID before the set changes: a refused message (a
	// flight not prefetched, the versions run out) keeps nothing.
	var events []Event
	var gone []flight.FLID
	for _, f := range flids {
		if seen[f] {
			continue
		}
		seen[f] = true
		cur, exists, err := w.current(f)
		if err != nil {
			return DeleteEffect{}, err
		}
		if !exists {
			out.Missing = append(out.Missing, f)
			continue
		}
		v, err := w.version()
		if err != nil {
			return DeleteEffect{}, err
		}
		ev, err := deleteEvent(f, v, cur.OperationDay, meta, ChangeDelete)
		if err != nil {
			return DeleteEffect{}, err
		}
		events = append(events, ev)
		gone = append(gone, f)
		out.Versions[f] = v
	}
	for _, f := range gone {
		w.cur[f] = nil
		if _, inDB := w.base[f]; inDB {
			w.recycled[f] = true
		}
		w.touch(f)
	}
	w.events = append(w.events, events...)
	return out, nil
}

// Dirty reports whether the set holds anything to write.
func (w *WorkingSet) Dirty() bool { return len(w.order) > 0 || len(w.events) > 0 }

// Pending is what a set holds to write, in the order the store writes it.
type Pending struct {
	// Gone are the flights the set deleted that the database holds: their
	// rows go first (main row, children, roster entry), even when the set
	// re-created them since.
	Gone []flight.FLID
	// Writes are the surviving changed flights, each whole against what the
	// database holds (a re-created flight is new again).
	Writes []Write
	// Events are the set's outbox rows in version order, the state on each
	// flight's newest only.
	Events []Event
}

// Pending returns what the set holds to write. The set keeps it until
// Written.
func (w *WorkingSet) Pending() Pending {
	var p Pending
	for _, f := range w.order {
		s := w.cur[f]
		_, inDB := w.base[f]
		if w.recycled[f] {
			p.Gone = append(p.Gone, f)
			inDB = false
		}
		if s == nil {
			continue
		}
		if !inDB {
			p.Writes = append(p.Writes, Write{Next: *s, Changed: flight.PresentKeys(*s), IsNew: true})
			continue
		}
		p.Writes = append(p.Writes, Write{Next: *s, Changed: w.changed[f]})
	}
	newestStateOnly(w.events)
	p.Events = w.events
	return p
}

// Written records that what Pending returned is in the transaction: the
// changed states become the base, and nothing is left to write.
func (w *WorkingSet) Written() {
	for _, f := range w.order {
		if s := w.cur[f]; s != nil {
			w.base[f] = *s
		} else {
			delete(w.base, f)
		}
	}
	w.cur, w.order, w.events, w.recycled = map[flight.FLID]*flight.State{}, nil, nil, map[flight.FLID]bool{}
	w.changed = map[flight.FLID][]string{}
}

// Stored yields every flight the set was loaded with and its state as the
// database holds it once what was written commits (nil: it does not
// exist): what a cache of committed states keeps.
func (w *WorkingSet) Stored() iter.Seq2[flight.FLID, *flight.State] {
	return func(yield func(flight.FLID, *flight.State) bool) {
		for f := range w.loaded {
			var sp *flight.State
			if s, ok := w.base[f]; ok {
				sp = &s
			}
			if !yield(f, sp) {
				return
			}
		}
	}
}

// IncrementEffect reports what a FLOP or ADFT did.
type IncrementEffect struct {
	// Versions maps each written flight to its new state_version.
	Versions map[flight.FLID]int64
	Created  []flight.FLID
	// Unchanged counts records that changed nothing (no version, no event).
	Unchanged int
	// States are the changed flights' new states.
	States map[flight.FLID]*flight.State
}

// DeleteEffect reports what an FDEL did.
type DeleteEffect struct {
	// Versions maps each deleted flight to its tombstone's state_version.
	Versions map[flight.FLID]int64
	// Missing lists FLIDs that did not exist (idempotent success).
	Missing []flight.FLID
}
