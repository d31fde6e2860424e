package cli

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// A pump whose feed another pump took over (a second `flightfeed pump`
// on the same database took a newer fencing epoch) stops and names that
// pump: the operator of two hosts with one --config learns which one goes
// on, not only that one does.
func TestPumpFencedNamesTheHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pump against all three services")
	}
	mdsn, pdsn := mailboxtest.NewMailbox(t), pgtest.New(t)
	cfg := writeFeed(t, mdsn, pdsn, kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")[0])
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errOut := runCLIContext(ctx, "pump", "--config", cfg, "--identity", "first")
		done <- result{code, errOut}
	}()
	st, err := store.Open(ctx, pdsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	await.Eventually(t, "the first pump to take the feed", time.Minute, func() (bool, string) {
		h, err := st.CurrentHolder(ctx)
		return err == nil && h.Holder == "first", fmt.Sprint(h, err)
	})
	// The second pump, as `flightfeed pump --identity second` takes it.
	if _, err := st.TakeEpoch(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	mbox, err := sql.Open("mysql", mdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	mailboxtest.Write(t, mbox, mailboxtest.Bodies("not xml")...)
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("the fenced pump did not stop")
	}
	if r.code != 1 || !strings.Contains(r.stderr, `another pump took over this feed's database: pump "second" holds it (epoch 2,`) {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
