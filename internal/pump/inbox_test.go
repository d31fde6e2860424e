package pump_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/pump"
)

// Bodies in memory at once stay within mailbox.maxBatchBytes: every read
// ahead is given what the batch being applied leaves of the budget, and
// reads nothing more; everything is processed once, in FIFO order.
func TestReadAheadKeepsBodiesWithinTheBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "mailbox: {maxBatchBytes: 65536}")
	in := &memInbox{results: map[int64]mailbox.Result{}}
	received := testNow.Add(-time.Hour)
	for i := range 60 {
		// Mostly 5 kB bodies, some of 30 kB, one larger than the budget.
		size := 5000
		switch {
		case i%7 == 3:
			size = 30000
		case i == 41:
			size = 100000
		}
		body := h.flop("REMC", 1+i%9, "<REMC>"+strings.Repeat("r", 200)+fmt.Sprint(i)+"</REMC>")
		body += strings.Repeat(" ", size-len(body)) // XML allows trailing white space
		received = received.Add(time.Second)
		in.rows = append(in.rows, mailbox.Row{ID: int64(i + 1), Received: received, Size: int64(len(body)), Body: []byte(body)})
	}
	p := h.newPump(func(o *pump.Options) { o.Inbox = in })
	h.drain(p)

	in.mu.Lock()
	defer in.mu.Unlock()
	ahead := 0
	for i, r := range in.reads {
		if r.skipped == 0 {
			continue // a fresh read: the budget is whole, its first row always comes
		}
		ahead++
		if want := max(65536-r.skipped, 0); r.budget != want {
			t.Errorf("read %d ahead of %d bytes in flight was given %d bytes, want %d", i, r.skipped, r.budget, want)
		}
		// A batch larger than the budget (one large message) is applied
		// alone: nothing may be read beside it.
		if r.read > 0 && r.skipped+r.read > 65536 {
			t.Errorf("read %d: %d bytes applied + %d read ahead > 65536", i, r.skipped, r.read)
		}
	}
	if ahead == 0 {
		t.Fatal("no read ahead happened: the test proves nothing")
	}
	var got, want []string
	for _, r := range in.rows {
		want = append(want, fmt.Sprintf("%d SUCCEEDED", r.ID))
		got = append(got, fmt.Sprintf("%d %s", r.ID, in.results[r.ID].Result))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("results (-want +got):\n%s", diff)
	}
}

// A write-back the mailbox refuses is retried after a backoff, and lands.
func TestRefusedWriteBackIsRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := &memInbox{results: map[int64]mailbox.Result{}, failBack: 3}
	body := h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>")
	in.rows = []mailbox.Row{{ID: 1, Received: testNow.Add(-time.Minute), Size: int64(len(body)), Body: []byte(body)}}
	p := h.newPump(func(o *pump.Options) { o.Inbox = in })
	h.drain(p)
	in.mu.Lock()
	defer in.mu.Unlock()
	if r := in.results[1]; r.Result != "SUCCEEDED" || !r.Received.Equal(in.rows[0].Received) {
		t.Fatalf("row 1 written back as %+v", r)
	}
	if in.failBack != 0 {
		t.Fatalf("%d refusals left: the write-back was not retried", in.failBack)
	}
}
