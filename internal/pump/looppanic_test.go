package pump_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/flightfeed/flightfeed/internal/failpoint"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// loopObserver records the pump's recovered loop panics by where.
type loopObserver struct {
	pump.NopObserver
	mu    sync.Mutex
	where []string
}

func (o *loopObserver) LoopPanicked(where string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.where = append(o.where, where)
}

func (o *loopObserver) counted() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.where)
}

// A read-ahead that panics does not end the process:
// the panic is logged and counted with where="read-ahead", the reading is
// dropped whole, and the loop reads the head again after a backoff. No row
// is skipped or reordered: every message succeeds and the flight's state
// versions follow the mailbox order. Not parallel: the arming is the
// process's.
func TestReadAheadPanicIsRecovered(t *testing.T) {
	h := newHarness(t)
	const n = 24
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = h.put(h.flop("ESTT", 1, fmt.Sprintf("<ESTT>09SEP26%04d</ESTT>", 900+i)))
	}
	obs := &loopObserver{}
	var logs logLines
	p := h.newPump(func(o *pump.Options) { o.Observer, o.Log = obs, logs.logger() })
	p.SetBatchSize(4) // several batches, so read-aheads run beside batches
	// Three panics: the first read (nothing to write back), and two of
	// the read-aheads that hold results to write back.
	disarm := failpoint.ArmPanic(failpoint.ReadAhead, 3)
	defer disarm()
	h.drain(p)

	for _, id := range ids {
		h.wantRow(id, pumpdata.StatusSucceeded, "")
	}
	if got := obs.counted(); !slices.Equal(got, []string{"read-ahead", "read-ahead", "read-ahead"}) {
		t.Fatalf("loop panics counted %v, want read-ahead three times", got)
	}
	if logs.matching(`"where"="read-ahead"`) == 0 || logs.matching("goroutine ") == 0 {
		t.Fatal("no log line with where and the stack")
	}
	// FIFO: the state versions of the flight's events rise with the
	// mailbox ids, each message once.
	rows, err := h.db.Query(t.Context(), `SELECT message_id FROM msg_event_record WHERE kind = 'KAFKA_MSG' ORDER BY state_version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var order []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		order = append(order, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, ids) {
		t.Fatalf("messages applied in the order %v, want the mailbox's %v", order, ids)
	}
	if left := h.intents(); left != 0 {
		t.Fatalf("%d results not written back", left)
	}
}
