package pump_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Bodies in memory at once stay within mailbox.maxBatchBytes: every read
// ahead is given what the batch being applied leaves of the budget, and
// reads nothing more; everything is processed once, in FIFO order.
func TestReadAheadKeepsBodiesWithinTheBudget(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		in := pumptest.NewInbox()
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
			in.Rows = append(in.Rows, pumpdata.Row{ID: int64(i + 1), Received: received, Size: int64(len(body)), Body: []byte(body)})
		}
		p := h.newPump(func(o *pump.Options) { o.Inbox = in })
		h.drain(p)

		in.Lock()
		defer in.Unlock()
		ahead := 0
		for i, r := range in.Reads {
			if r.Skipped == 0 {
				continue // a fresh read: the budget is whole, its first row always comes
			}
			ahead++
			if want := max(65536-r.Skipped, 0); r.Budget != want {
				t.Errorf("read %d ahead of %d bytes in flight was given %d bytes, want %d", i, r.Skipped, r.Budget, want)
			}
			// A batch larger than the budget (one large message) is applied
			// alone: nothing may be read beside it.
			if r.Read > 0 && r.Skipped+r.Read > 65536 {
				t.Errorf("read %d: %d bytes applied + %d read ahead > 65536", i, r.Skipped, r.Read)
			}
		}
		if ahead == 0 {
			t.Fatal("no read ahead happened: the test proves nothing")
		}
		var got, want []string
		for _, r := range in.Rows {
			want = append(want, fmt.Sprintf("%d SUCCEEDED", r.ID))
			got = append(got, fmt.Sprintf("%d %s", r.ID, in.Results[r.ID].Result))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("results (-want +got):\n%s", diff)
		}
	}, "mailbox: {maxBatchBytes: 65536}")
}

// A write-back the mailbox refuses is retried after a backoff, and lands.
func TestRefusedWriteBackIsRetried(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		in := &pumptest.Inbox{Results: map[int64]pumpdata.Backfill{}, FailBack: 3}
		body := h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>")
		in.Rows = []pumpdata.Row{{ID: 1, Received: testNow.Add(-time.Minute), Size: int64(len(body)), Body: []byte(body)}}
		p := h.newPump(func(o *pump.Options) { o.Inbox = in })
		h.drain(p)
		in.Lock()
		defer in.Unlock()
		if r := in.Results[1]; r.Result != "SUCCEEDED" || !r.Received.Equal(in.Rows[0].Received) {
			t.Fatalf("row 1 written back as %+v", r)
		}
		if in.FailBack != 0 {
			t.Fatalf("%d refusals left: the write-back was not retried", in.FailBack)
		}
	})
}
