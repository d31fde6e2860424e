package pump_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// memPump is a pump of the test feed (extra YAML lines override it) on a
// mailbox and a database in memory.
func memPump(t *testing.T, st *pumptest.Store, in *pumptest.Inbox, extra ...string) *pump.Pump {
	t.Helper()
	return observedMemPump(t, st, in, nil, extra...)
}

// observedMemPump is memPump reporting to obs (nil: none).
func observedMemPump(t *testing.T, st *pumptest.Store, in *pumptest.Inbox, obs pump.Observer, extra ...string) *pump.Pump {
	t.Helper()
	feed := testFeed(t, "mem:mem@tcp(127.0.0.1:1)/mailbox", "postgres://mem@127.0.0.1:1/feed", extra...)
	p, err := pump.New(t.Context(), pump.Options{Feed: feedrun.PumpFeed(feed), Store: st, Inbox: in, Door: feedDoor(t, feed), Identity: "mem-pump",
		Clock: shiftedClock{offset: time.Until(testNow)}, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// memRows are mailbox rows 1..n with these bodies, a second apart.
func memRows(bodies ...string) []pumpdata.Row {
	rows := make([]pumpdata.Row, len(bodies))
	for i, b := range bodies {
		rows[i] = pumpdata.Row{ID: int64(i + 1), Received: testNow.Add(-time.Hour + time.Duration(i)*time.Second),
			Size: int64(len(b)), Body: []byte(b)}
	}
	return rows
}

// describe says what a batch came to, as the loop reads it.
func describe(o pump.BatchOutcome) string {
	switch {
	case errors.Is(o.Fatal, pumpdata.ErrFenced):
		return "stopped: fenced"
	case o.Fatal != nil:
		return "stopped: " + o.Fatal.Error()
	case o.Blocked && o.Wait == time.Millisecond:
		return "blocked, retry at once"
	case o.Blocked && o.Wait > 0:
		return "blocked, backoff"
	case o.Blocked:
		return "blocked"
	case o.Whole:
		return "whole"
	default:
		return "read the head again"
	}
}

// Each case applies batches of mailbox rows 1..n, as the loop would after
// reading them at the head, to a pump whose database and mailbox are in
// memory, and compares the transcript: what each batch came to, what it
// committed (in order), the results it queued for write-back, the trace
// rows it wrote, and the size of the next batch read.
func TestBatchOutcomes(t *testing.T) {
	t.Parallel()
	var m sisMessages
	ok := func(flid int) string { return m.flop("ESTT", flid, "<ESTT>09SEP260930</ESTT>") }
	unsupported := `<MSG>` + m.meta("ZZZZ", "DNLD") + `<ZZZZ><RECS>1</RECS></ZZZZ></MSG>`
	malformed := `<MSG><META><SNDR>AODB</SNDR>`
	snapshot := m.schd("DNLD", fltr(5, "X", "09"))
	outage := errors.New("read tcp 127.0.0.1:5432: connection reset by peer")
	refused := &pgconn.PgError{Code: "23514", Message: "new row violates check constraint"}
	trigger := &pgconn.PgError{Code: "P0001", Message: "flight row refused"}
	otherTrigger := &pgconn.PgError{Code: "P0001", Message: "flight row refused again, otherwise"}
	missing := &pgconn.PgError{Code: "42P01", Message: `relation "proc_state" does not exist`}
	three := []string{ok(1), ok(2), ok(3)}
	repeat := func(ids []int64, n int) [][]int64 { return slices.Repeat([][]int64{ids}, n) }

	type testCase struct {
		name    string
		extra   []string
		bodies  []string
		prep    func(*pumptest.Store, []pumpdata.Row)
		faults  []*pumptest.Fault
		batches [][]int64
		want    []string
	}
	cases := []testCase{{
		name:    "a whole batch commits its results in order",
		bodies:  three,
		batches: [][]int64{{1, 2, 3}},
		want:    []string{"[1 2 3]: whole; committed [1 SUCCEEDED 2 SUCCEEDED 3 SUCCEEDED]; write back [1 2 3]; next batch 50"},
	}, {
		name:    "a DEAD message keeps its place in the batch",
		bodies:  []string{ok(1), malformed, ok(3)},
		batches: [][]int64{{1, 2, 3}},
		want:    []string{"[1 2 3]: whole; committed [1 SUCCEEDED 2 DEAD MALFORMED_XML 3 SUCCEEDED]; write back [1 2 3]; next batch 50"},
	}, {
		name:    "a message that must wait ends the batch before it, then waits alone",
		bodies:  []string{ok(1), unsupported, ok(3)},
		batches: [][]int64{{1, 2, 3}, {2, 3}},
		want: []string{
			"[1 2 3]: read the head again; committed [1 SUCCEEDED]; write back [1]; next batch 50",
			"[2 3]: blocked, backoff; committed [2 FAILED UNKNOWN_TYPE]; next batch 50",
		},
	}, {
		name:    "infrastructure errors block the head without killing it, the batch shrunk to one",
		bodies:  three,
		faults:  []*pumptest.Fault{{Call: "finish", Err: outage}},
		batches: append([][]int64{{1, 2, 3}}, repeat([]int64{1}, 5)...),
		want: append([]string{"[1 2 3]: blocked, backoff; next batch 1"},
			slices.Repeat([]string{"[1]: blocked, backoff; committed [1 FAILED INFRA]; next batch 1"}, 5)...),
	}, {
		name:    "infrastructure errors give up on the head after pump.infraRetryLimit",
		extra:   []string{"pump: {backoffInitial: 5ms, backoffMax: 50ms, infraRetryLimit: 2}"},
		bodies:  three,
		faults:  []*pumptest.Fault{{Call: "finish", ID: 1, Err: outage}},
		batches: [][]int64{{1}, {1}, {1}, {2, 3}},
		want: []string{
			"[1]: blocked, backoff; committed [1 FAILED INFRA]; next batch 1",
			"[1]: blocked, backoff; committed [1 FAILED INFRA]; next batch 1",
			"[1]: read the head again; committed [1 DEAD INFRA]; write back [1]; next batch 1",
			"[2 3]: whole; committed [2 SUCCEEDED 3 SUCCEEDED]; write back [2 3]; next batch 2",
		},
	}, {
		name:    "refused data is not DEAD in a batch of more than one; alone at i > 0 it is, and the rest go on",
		bodies:  three,
		faults:  []*pumptest.Fault{{Call: "finish", ID: 2, Err: refused}},
		batches: [][]int64{{1, 2, 3}, {1}, {2}, {3}},
		want: []string{
			"[1 2 3]: blocked, backoff; next batch 1",
			"[1]: whole; committed [1 SUCCEEDED]; write back [1]; next batch 2",
			"[2]: read the head again; committed [2 DEAD DATA_REJECTED]; write back [2]; next batch 1",
			"[3]: whole; committed [3 SUCCEEDED]; write back [3]; next batch 2",
		},
	}, {
		name:    "the same answer RefusalRepeats times on a batch of one is DEAD",
		bodies:  three[:2],
		faults:  []*pumptest.Fault{{Call: "finish", ID: 1, Err: trigger}},
		batches: [][]int64{{1, 2}, {1}, {1}, {1}, {2}},
		want: []string{
			"[1 2]: blocked, backoff; next batch 1",
			"[1]: blocked, backoff; committed [1 FAILED INFRA]; next batch 1",
			"[1]: blocked, backoff; committed [1 FAILED INFRA]; next batch 1",
			"[1]: read the head again; committed [1 DEAD DATA_REJECTED]; write back [1]; next batch 1",
			"[2]: whole; committed [2 SUCCEEDED]; write back [2]; next batch 2",
		},
	}, {
		name:    "another answer starts the count again",
		bodies:  three[:1],
		faults:  []*pumptest.Fault{{Call: "finish", Err: trigger, Times: 2}, {Call: "finish", Err: otherTrigger, Times: 2}},
		batches: repeat([]int64{1}, 5),
		want: append(slices.Repeat([]string{"[1]: blocked, backoff; committed [1 FAILED INFRA]; next batch 1"}, 4),
			"[1]: whole; committed [1 SUCCEEDED]; write back [1]; next batch 2"),
	}, {
		name:    "an answer about the server or the schema never counts as a refusal",
		bodies:  three[:1],
		faults:  []*pumptest.Fault{{Call: "finish", Err: missing}},
		batches: repeat([]int64{1}, 2*pump.RefusalRepeats),
		want:    slices.Repeat([]string{"[1]: blocked, backoff; committed [1 FAILED INFRA]; next batch 1"}, 2*pump.RefusalRepeats),
	}, {
		name:    "a lost snapshot compare-and-set retries at once, never DEAD",
		bodies:  []string{snapshot},
		faults:  []*pumptest.Fault{{Call: "snapshot", Err: fmt.Errorf("apply: %w", pumpdata.ErrConflict), Times: 2 * pump.RefusalRepeats}},
		batches: repeat([]int64{1}, 2*pump.RefusalRepeats+1),
		want: append(slices.Repeat([]string{"[1]: blocked, retry at once; traces [1 ROLLED_BACK]; next batch 1"}, 2*pump.RefusalRepeats),
			"[1]: whole; committed [1 SUCCEEDED]; write back [1]; traces [1 COMMITTED]; next batch 2"),
	}, {
		name:    "a snapshot whose own apply fails for infrastructure traces that attempt, once",
		bodies:  []string{ok(1), snapshot},
		faults:  []*pumptest.Fault{{Call: "snapshot", Err: outage, Times: 1}},
		batches: [][]int64{{1, 2}, {1}, {2}},
		want: []string{
			"[1 2]: blocked, backoff; traces [2 ROLLED_BACK]; next batch 1",
			"[1]: whole; committed [1 SUCCEEDED]; write back [1]; next batch 2",
			"[2]: whole; committed [2 SUCCEEDED]; write back [2]; traces [2 COMMITTED]; next batch 4",
		},
	}, {
		name:    "a rolled-back batch's snapshot leaves a trace row that says so",
		bodies:  []string{ok(1), snapshot},
		faults:  []*pumptest.Fault{{Call: "commit", Err: &pgconn.PgError{Code: "40001"}, Times: 1}},
		batches: [][]int64{{1, 2}, {1}},
		want: []string{
			"[1 2]: blocked, backoff; traces [2 ROLLED_BACK]; next batch 1",
			"[1]: whole; committed [1 SUCCEEDED]; write back [1]; next batch 2",
		},
	}, {
		// The server may have committed it: the trace row says so (the
		// next start resolves it), and nothing is recorded on the head,
		// whose result may be committed; the retry reads what is.
		name:    "a commit that fails without the server's answer traces COMMIT_UNKNOWN and records nothing",
		bodies:  []string{snapshot},
		faults:  []*pumptest.Fault{{Call: "commit", Err: outage, Times: 2}},
		batches: [][]int64{{1}, {1}, {1}},
		want: []string{
			"[1]: blocked, backoff; traces [1 COMMIT_UNKNOWN]; next batch 1",
			"[1]: blocked, backoff; traces [1 COMMIT_UNKNOWN]; next batch 1",
			"[1]: whole; committed [1 SUCCEEDED]; write back [1]; traces [1 COMMITTED]; next batch 2",
		},
	}, {
		// Fenced at its commit (the memory store checks the epoch there):
		// the attempt is traced, flagged FENCED, and the pump stops.
		name:    "a batch stopped by a lost fence traces its snapshot's attempt FENCED",
		bodies:  []string{ok(1), snapshot},
		faults:  []*pumptest.Fault{{Call: "commit", Err: fmt.Errorf("commit: %w", pumpdata.ErrFenced)}},
		batches: [][]int64{{1, 2}},
		want:    []string{"[1 2]: stopped: fenced; traces [2 ROLLED_BACK FENCED]; next batch 50"},
	}, {
		name:    "a pump another one took over stops, committing nothing",
		bodies:  three,
		prep:    func(s *pumptest.Store, _ []pumpdata.Row) { s.Fence() },
		batches: [][]int64{{1, 2, 3}},
		want:    []string{"[1 2 3]: stopped: fenced; next batch 50"},
	}, {
		name:   "a row processed before is only written back again",
		bodies: three[:2],
		prep: func(s *pumptest.Store, rows []pumpdata.Row) {
			s.Update(func(d *pumptest.Data) {
				d.States[1] = pumpdata.ProcState{Status: pumpdata.StatusDead, Reason: "X", Note: "X: before", Attempts: 1,
					ReceivedAt: rows[0].Received, Digest: pumpdata.PayloadDigest(rows[0].Body)}
			})
		},
		batches: [][]int64{{1, 2}},
		want:    []string{"[1 2]: whole; committed [2 SUCCEEDED]; write back [1 2]; next batch 50"},
	}, {
		name:   "a row whose id was processed as another message is new",
		bodies: three[:1],
		prep: func(s *pumptest.Store, rows []pumpdata.Row) {
			s.Update(func(d *pumptest.Data) {
				d.States[1] = pumpdata.ProcState{Status: pumpdata.StatusDead, Reason: "X", Note: "X: before", Attempts: 1,
					ReceivedAt: rows[0].Received.Add(-24 * time.Hour), Digest: pumpdata.PayloadDigest(rows[0].Body)}
			})
		},
		batches: [][]int64{{1}},
		want:    []string{"[1]: whole; committed [1 SUCCEEDED]; write back [1]; next batch 50"},
	}}
	// Every step of the batch's transaction that fails rolls the whole
	// batch back (infraFailure).
	for _, call := range []string{"begin", "prefetch", "finish", "commit"} {
		cases = append(cases, testCase{
			name:    "a failing " + call + " rolls the whole batch back",
			bodies:  three,
			faults:  []*pumptest.Fault{{Call: call, Err: outage, Times: 1}},
			batches: [][]int64{{1, 2, 3}, {1}},
			want: []string{
				"[1 2 3]: blocked, backoff; next batch 1",
				"[1]: whole; committed [1 SUCCEEDED]; write back [1]; next batch 2",
			},
		})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := newMemStore(c.faults...)
			rows := memRows(c.bodies...)
			p := memPump(t, st, pumptest.NewInbox(), c.extra...)
			if c.prep != nil {
				c.prep(st, rows)
			}
			var got []string
			var commits, traces, pending int
			for _, ids := range c.batches {
				var batch []pumpdata.Row
				for _, id := range ids {
					batch = append(batch, rows[id-1])
				}
				line := fmt.Sprintf("%v: %s", ids, describe(p.ApplyBatch(context.Background(), batch)))
				commitsNow, tracesNow := st.Commits(), st.Traces()
				if news := slices.Concat(commitsNow[commits:]...); len(news) > 0 {
					line += fmt.Sprintf("; committed %v", news)
				}
				var traced []string
				for _, e := range tracesNow[traces:] {
					line := fmt.Sprintf("%d %s", e.MessageID, e.Result)
					// What stopped the batch, when something did.
					for _, f := range e.Flags {
						if f == pump.FlagFenced || f == pump.FlagShutdown {
							line += " " + f
						}
					}
					traced = append(traced, line)
				}
				commits, traces = len(commitsNow), len(tracesNow)
				var back []int64
				for _, b := range p.Pending()[pending:] {
					back = append(back, b.MessageID)
				}
				pending = len(p.Pending())
				if len(back) > 0 {
					line += fmt.Sprintf("; write back %v", back)
				}
				if len(traced) > 0 {
					line += fmt.Sprintf("; traces %v", traced)
				}
				got = append(got, line+fmt.Sprintf("; next batch %d", p.BatchSize()))
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("transcript (-want +got):\n%s", diff)
			}
		})
	}
}

// The read-ahead overlaps the next head read with the batch being
// applied, and is dropped unless that batch applied whole: whatever stops
// a batch (a message that must wait, an infrastructure error, a refusal),
// every row is committed and written back in FIFO order, as if the head
// were read after every commit.
func TestReadAheadKeepsTheFIFOOrder(t *testing.T) {
	t.Parallel()
	var m sisMessages
	bodies := make([]string, 12)
	for i := range bodies {
		bodies[i] = m.flop("ESTT", 1+i%4, fmt.Sprintf("<ESTT>09SEP2609%02d</ESTT>", i))
	}
	unsupported := `<MSG>` + m.meta("ZZZZ", "DNLD") + `<ZZZZ><RECS>1</RECS></ZZZZ></MSG>`
	outage := errors.New("read tcp 127.0.0.1:5432: connection reset by peer")
	trigger := &pgconn.PgError{Code: "P0001", Message: "flight row refused"}
	succeeded := func(ids ...int) []string {
		var out []string
		for _, id := range ids {
			out = append(out, fmt.Sprintf("%d SUCCEEDED", id))
		}
		return out
	}
	cases := []struct {
		name   string
		bodies []string
		faults []*pumptest.Fault
		// want: every committed result, in commit order.
		want []string
	}{{
		name:   "batches applied whole",
		bodies: bodies,
		want:   succeeded(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12),
	}, {
		name:   "a message that must wait in a batch read ahead",
		bodies: slices.Concat(bodies[:6], []string{unsupported}, bodies[7:]),
		want: slices.Concat(succeeded(1, 2, 3, 4, 5, 6),
			[]string{"7 FAILED UNKNOWN_TYPE", "7 FAILED UNKNOWN_TYPE", "7 DEAD UNKNOWN_TYPE"},
			succeeded(8, 9, 10, 11, 12)),
	}, {
		name:   "an infrastructure error in a batch read ahead",
		bodies: bodies,
		faults: []*pumptest.Fault{{Call: "finish", ID: 7, Err: outage, Times: 3}},
		want:   succeeded(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12),
	}, {
		name:   "a refusal in a batch read ahead",
		bodies: bodies,
		faults: []*pumptest.Fault{{Call: "finish", ID: 7, Err: trigger}},
		want: slices.Concat(succeeded(1, 2, 3, 4, 5, 6), []string{"7 FAILED INFRA", "7 FAILED INFRA", "7 DEAD DATA_REJECTED"},
			succeeded(8, 9, 10, 11, 12)),
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := newMemStore(c.faults...)
			in := &pumptest.Inbox{Rows: memRows(c.bodies...), Results: map[int64]pumpdata.Backfill{}}
			// Twelve rows in batches of four: the second and third are
			// read ahead.
			p := memPump(t, st, in, "mailbox: {batchSize: 4}")
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if err := p.Drain(ctx, nil); err != nil || ctx.Err() != nil {
				t.Fatalf("drain: %v (%v); status %+v", err, ctx.Err(), p.Status())
			}
			if diff := cmp.Diff(c.want, st.Committed()); diff != "" {
				t.Errorf("committed results (-want +got):\n%s", diff)
			}
			in.Lock()
			defer in.Unlock()
			var want, back []int64
			for _, r := range in.Rows {
				want = append(want, r.ID)
			}
			for _, b := range in.Backs {
				back = append(back, b...)
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("rows written back (-want +got):\n%s", diff)
			}
			ahead := 0
			for _, r := range in.Reads {
				if r.Skipped > 0 && r.Rows > 0 {
					ahead++
				}
			}
			if ahead == 0 {
				t.Error("nothing was read ahead: the test proves nothing")
			}
		})
	}
}

// A whole batch rolled back and retried traces each attempt of its snapshot
// (ROLLED_BACK, then COMMITTED) but raises the snapshot's flags once: by the
// attempt that commits, not by the one rolled back (processing rules R5.6).
func TestRolledBackSnapshotAlertsOnceWithItsRetry(t *testing.T) {
	t.Parallel()
	var m sisMessages
	bodies := []string{m.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"), m.schd("DNLD")} // an empty DNLD: EMPTY
	// A serialization failure at COMMIT: the server answered, nothing committed.
	st := newMemStore(&pumptest.Fault{Call: "commit", Err: &pgconn.PgError{Code: "40001"}, Times: 1})
	obs := &flagObserver{flags: map[string]int{}}
	p := observedMemPump(t, st, pumptest.NewInbox(), obs)
	rows := memRows(bodies...)
	for _, batch := range [][]pumpdata.Row{rows, rows[:1], rows[1:]} {
		p.ApplyBatch(t.Context(), batch)
	}
	var traced []string
	for _, e := range st.Traces() {
		traced = append(traced, fmt.Sprintf("%d %s %v", e.MessageID, e.Result, e.Flags))
	}
	if diff := cmp.Diff([]string{"2 ROLLED_BACK [EMPTY]", "2 COMMITTED [EMPTY]"}, traced); diff != "" {
		t.Errorf("trace rows (-want +got):\n%s", diff)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if diff := cmp.Diff(map[string]int{"EMPTY": 1}, obs.flags); diff != "" {
		t.Errorf("flags counted (-want +got):\n%s", diff)
	}
	noticed := map[string]int{}
	for _, n := range p.DrainNotices() {
		if n.Kind == pump.NoticeSnapshotFlag {
			noticed[n.Reason]++
		}
	}
	if diff := cmp.Diff(map[string]int{"EMPTY": 1}, noticed); diff != "" {
		t.Errorf("SnapshotFlag notices (-want +got):\n%s", diff)
	}
}
