package pump_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// A running pump renews its fencing epoch (pipeline_lock.renewed_at) even
// with nothing to do, so a pump it fenced can tell it is alive; and it
// notices at a renewal that another pump took the epoch, stopping with
// ErrFenced though its mailbox is empty.
func TestIdlePumpRenewsItsEpochAndNoticesAFence(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.newPump()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	await.Eventually(t, "a renewal of the epoch", 60*time.Second, func() (bool, string) {
		n := h.count(`SELECT count(*) FROM pipeline_lock WHERE renewed_at > acquired_at`)
		return n == 1, fmt.Sprintf("%d renewed", n)
	})
	st, err := store.Open(t.Context(), h.feed.Secrets.DatabaseDSN, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.TakeEpoch(t.Context(), "intruder"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, pump.ErrFenced) {
			t.Fatalf("run ended with %v, want ErrFenced", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the idle pump did not notice the fence")
	}
}
