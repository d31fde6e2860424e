package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/store"
)

// A replay request read by an id that has none is the store's own
// ErrNotFound, which the read API answers 404 on without knowing the
// driver; a stored one reads back as recorded.
func TestReplayReadsItsRequestOrNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	received := time.Date(2026, 9, 9, 2, 0, 0, 0, time.UTC)
	archive := []store.ArchivedRow{{MessageID: 21, ReceivedAt: received, Size: 6, Body: []byte("<MSG/>"), New: true}}
	results := []store.Result{{MessageID: 21, ReceivedAt: received, Type: "FLOP", Styp: "GATE", Status: store.StatusDead,
		Reason: "X", New: true}}
	if err := f.inTx(func(tx *store.Tx) error { return tx.FinishBatch(ctx, archive, nil, results) }); err != nil {
		t.Fatal(err)
	}
	req, err := f.store.RequestReplay(ctx, 21, store.ReplayAsNew)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.store.Replay(ctx, req.ID)
	if err != nil || got.MessageID != 21 || got.State != store.ReplayPending {
		t.Fatalf("Replay(%d) = %+v, %v; want message 21's pending request", req.ID, got, err)
	}
	if _, err := f.store.Replay(ctx, req.ID+1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Replay of an id with no request: %v, want store.ErrNotFound", err)
	}
}
