package rebuild

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/verify"
)

// cursor is the message being applied and when the live pump applied it.
type cursor struct {
	mu sync.Mutex
	id int64
	at time.Time
}

func (c *cursor) set(id int64, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id, c.at = id, at
}

func (c *cursor) get() (int64, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id, c.at
}

// replayClock reads as the live finish time of the message being applied,
// so what the store and the pump stamp is what the live pump stamped;
// timers and tickers are the real ones.
type replayClock struct {
	clock.RealClock
	cur *cursor
}

func (c replayClock) Now() time.Time {
	if _, at := c.cur.get(); !at.IsZero() {
		return at
	}
	return time.Now()
}

func (c replayClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// archiveInbox is the pump's Inbox over the archive: it serves the
// replayed messages in mailbox order, one at a time (no read-ahead: the
// message asking the request log is the one served), a row done once its
// terminal result is written back. It sends and writes nothing.
type archiveInbox struct {
	live     *store.Store
	order    []verify.Archived
	finished map[int64]time.Time
	cur      *cursor

	mu   sync.Mutex
	next int
	done map[int64]bool
}

func (in *archiveInbox) Head(ctx context.Context, _ int, _, _ int64, skip map[int64]bool) ([]pumpdata.Row, bool, error) {
	if len(skip) > 0 {
		return nil, false, nil // a read-ahead: the next row is served once this one is done
	}
	in.mu.Lock()
	for in.next < len(in.order) && in.done[in.order[in.next].ID] {
		in.next++
	}
	if in.next == len(in.order) {
		in.mu.Unlock()
		return nil, false, nil
	}
	id := in.order[in.next].ID
	more := in.next+1 < len(in.order)
	in.mu.Unlock()
	row, err := in.live.ArchivedRow(ctx, id)
	if err != nil {
		return nil, false, err
	}
	in.cur.set(id, in.finished[id])
	return []pumpdata.Row{row}, more, nil
}

func (in *archiveInbox) Backfill(_ context.Context, results []pumpdata.Backfill) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range results {
		if r.Result == "SUCCEEDED" || r.Result == "SKIPPED" || r.Result == "DEAD" {
			in.done[r.MessageID] = true
		}
	}
	return nil
}

func (in *archiveInbox) Depth(context.Context) (int64, time.Time, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var n int64
	var oldest time.Time
	for _, a := range in.order[in.next:] {
		if !in.done[a.ID] {
			if n == 0 {
				oldest = a.Received
			}
			n++
		}
	}
	return n, oldest, nil
}

func (in *archiveInbox) SendRequest(context.Context, string, []byte, time.Time) (int64, error) {
	return 0, errNoSend
}

func (in *archiveInbox) FindRequest(context.Context, string, string, time.Time) (int64, bool, error) {
	return 0, false, errNoSend
}

// rebuildStore is the scratch store with the live request log: the
// requests a message sees are the live ones as of the message (package
// verify's RequestLog); nothing is pruned.
type rebuildStore struct {
	pump.Store
	log verify.RequestLog
	cur *cursor
}

func (s rebuildStore) CurrentRequest(_ context.Context, kind string) (*pumpdata.Request, error) {
	id, at := s.cur.get()
	return s.log.Pending(kind, id, at), nil
}

func (s rebuildStore) Prune(context.Context, time.Time, time.Time, time.Time) (int64, error) {
	return 0, nil
}

func (s rebuildStore) AskedSince(context.Context, string, []string, time.Time) (pumpdata.AskedDays, error) {
	return pumpdata.AskedDays{Asked: map[string]bool{}, Failed: map[string]pumpdata.FailedRequest{}}, nil
}

func (s rebuildStore) PendingReplays(context.Context, int) ([]pumpdata.ReplayRequest, error) {
	return nil, nil
}

func (s rebuildStore) Begin(ctx context.Context, epoch int64) (pump.Tx, error) {
	tx, err := s.Store.Begin(ctx, epoch)
	if err != nil {
		return nil, err
	}
	return rebuildTx{Tx: tx, s: s}, nil
}

type rebuildTx struct {
	pump.Tx
	s rebuildStore
}

func (t rebuildTx) CurrentRequest(ctx context.Context, kind string) (*pumpdata.Request, error) {
	return t.s.CurrentRequest(ctx, kind)
}

func (t rebuildTx) RequestedBefore(_ context.Context, kind, day, receiver string) (bool, error) {
	_, at := t.s.cur.get()
	return t.s.log.RequestedBefore(kind, day, receiver, at), nil
}

// SettleRequest writes nothing: the live log holds the outcome.
func (t rebuildTx) SettleRequest(context.Context, int64, pumpdata.RequestSettlement) error {
	return nil
}

func (t rebuildTx) OpenRequest(context.Context, string, string, string, string, string, string, int) (*pumpdata.Request, error) {
	return nil, errNoSend
}

func (t rebuildTx) Savepoint(ctx context.Context) (pump.Tx, error) {
	sp, err := t.Tx.Savepoint(ctx)
	if err != nil {
		return nil, err
	}
	return rebuildTx{Tx: sp, s: t.s}, nil
}

var (
	_ pump.Inbox = (*archiveInbox)(nil)
	_ pump.Store = rebuildStore{}
	_ pump.Tx    = rebuildTx{}
)
