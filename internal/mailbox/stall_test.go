package mailbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/faultproxy"
)

// A mailbox server that stops answering fails the call after
// DefaultIOTimeout of silence (here shortened) even when the DSN sets no
// timeout: the pump then reports the mailbox unreachable instead of
// holding its head for ever without a word. A DSN's own timeout wins.
func TestStalledMailboxFailsTheCallWithoutADSNTimeout(t *testing.T) {
	defer mailbox.SetIOTimeout(time.Second)()
	cfg, err := mysql.ParseDSN(mailboxtest.NewMailbox(t))
	if err != nil {
		t.Fatal(err)
	}
	px, err := faultproxy.Start(cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	cfg.Addr = px.Addr()
	cfg.ReadTimeout, cfg.WriteTimeout = 0, 0
	var spec v1alpha1.FlightFeedSpec
	config.SetDefaults(&spec)
	mb, err := mailbox.Open(t.Context(), cfg.FormatDSN(), spec.Mailbox)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mb.Close() })
	if _, _, err := mb.Depth(t.Context()); err != nil {
		t.Fatalf("before the stall: %v", err)
	}
	if err := px.SetMode(faultproxy.Stall); err != nil {
		t.Fatal(err)
	}
	// The test's own bound is far above the timeout: only the timeout ends
	// the call.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	start := time.Now()
	_, _, err = mb.Depth(ctx)
	if err == nil {
		t.Fatal("a stalled mailbox answered")
	}
	if ctx.Err() != nil {
		t.Fatalf("the call ended only with the test's own deadline after %s: %v", time.Since(start), err)
	}
	if !mailbox.IsUnavailable(err) || !strings.Contains(err.Error(), "timeout") && !strings.Contains(err.Error(), "invalid connection") {
		t.Errorf("error %v: want the mailbox unavailable after a timeout", err)
	}
}
