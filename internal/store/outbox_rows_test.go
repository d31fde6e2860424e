package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A window row is done when each of its records is: its notice (delivered
// or parked) and its state, or the newest state of its flight that covers
// it. The cursor passes the done rows up to the first that is not; the
// rows done after it are named so that the next reads leave them out.
func TestWindowDone(t *testing.T) {
	notice := func(id int64) OutboxEvent { return OutboxEvent{ID: id, Kind: KindNotice, Covers: []int64{id}} }
	state := func(id int64, covers ...int64) OutboxEvent {
		return OutboxEvent{ID: id, Kind: KindState, Covers: covers}
	}
	n := func(id int64) RecordKey { return RecordKey{ID: id, Kind: KindNotice} }
	s := func(id int64) RecordKey { return RecordKey{ID: id, Kind: KindState} }
	// Rows 12, 14, 16 of flight 1 (12 and 14 notices alone, 16 both) and
	// 18 of flight 2 (both), above cursor 10.
	window := Window{Cursor: 10, Events: []OutboxEvent{notice(12), notice(14), state(16, 16), notice(16), state(18, 18), notice(18)}}
	// Flight 1's three rows with both records, 12 and 14 superseded by 16.
	covering := Window{Cursor: 10, Events: []OutboxEvent{notice(12), notice(14), state(16, 12, 14, 16), notice(16)}}
	parked := covering
	parked.Events = append([]OutboxEvent(nil), covering.Events...)
	parked.Events[2].Parked = true
	for name, c := range map[string]struct {
		w    Window
		done []RecordKey
		to   int64
		rows []int64
	}{
		"nothing done":                   {window, nil, 10, nil},
		"notices alone":                  {window, []RecordKey{n(12), n(14)}, 14, []int64{12, 14}},
		"a row's notice but not state":   {window, []RecordKey{n(12), n(14), n(16)}, 14, []int64{12, 14}},
		"a row's state but not notice":   {window, []RecordKey{n(12), n(14), s(16), n(18), s(18)}, 14, []int64{12, 14, 18}},
		"all":                            {window, []RecordKey{n(12), n(14), s(16), n(16), n(18), s(18)}, 18, []int64{12, 14, 16, 18}},
		"states covered, notice missing": {covering, []RecordKey{s(16), n(14), n(16)}, 10, []int64{14, 16}},
		"covered by the newest":          {covering, []RecordKey{s(16), n(12), n(14)}, 14, []int64{12, 14}},
		"covered by a parked newest":     {parked, []RecordKey{n(12), n(14), n(16)}, 16, []int64{12, 14, 16}},
	} {
		t.Run(name, func(t *testing.T) {
			done := map[RecordKey]struct{}{}
			for _, k := range c.done {
				done[k] = struct{}{}
			}
			c.w.Full = true // the rows left out play no part here
			to, rows := c.w.WindowDone(done)
			if to != c.to || !cmp.Equal(rows, c.rows) {
				t.Fatalf("WindowDone = %d %v, want %d %v", to, rows, c.to, c.rows)
			}
		})
	}
	// Not full: with every window row done, the cursor passes the rows
	// left out of the read too (their records are in done).
	w := window
	done := map[RecordKey]struct{}{n(12): {}, n(14): {}, s(16): {}, n(16): {}, n(18): {}, s(18): {}, n(20): {}, s(20): {}}
	if to := w.DoneUpTo(done); to != 20 {
		t.Fatalf("not full: cursor %d, want 20 (past the row left out)", to)
	}
	delete(done, n(14))
	if to := w.DoneUpTo(done); to != 12 {
		t.Fatalf("not full, row 14 pending: cursor %d, want 12", to)
	}
}
