package pump_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
)

// faultyStore is a pump.Store (either backend's) whose transactions fail
// as the test says: begin refuses a Begin, write runs before every write
// (its error fails it), commit replaces the COMMIT of a transaction.
type faultyStore struct {
	pump.Store
	mu     sync.Mutex
	begin  func() error
	write  func(ctx context.Context, w pump.Writes) error
	commit func(ctx context.Context, tx pump.Tx) error
}

func (s *faultyStore) set(fn func(s *faultyStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

func (s *faultyStore) Begin(ctx context.Context, epoch int64) (pump.Tx, error) {
	s.mu.Lock()
	begin := s.begin
	s.mu.Unlock()
	if begin != nil {
		if err := begin(); err != nil {
			return nil, err
		}
	}
	tx, err := s.Store.Begin(ctx, epoch)
	if err != nil {
		return nil, err
	}
	return faultyTx{Tx: tx, s: s}, nil
}

type faultyTx struct {
	pump.Tx
	s *faultyStore
}

func (t faultyTx) Write(ctx context.Context, w pump.Writes) error {
	t.s.mu.Lock()
	write := t.s.write
	t.s.mu.Unlock()
	if write != nil {
		if err := write(ctx, w); err != nil {
			return err
		}
	}
	return t.Tx.Write(ctx, w)
}

func (t faultyTx) Commit(ctx context.Context) error {
	t.s.mu.Lock()
	commit := t.s.commit
	t.s.mu.Unlock()
	if commit != nil {
		return commit(ctx, t.Tx)
	}
	return t.Tx.Commit(ctx)
}

// faultyPump is a pump of h whose store fails as fs says (set afterwards).
func (h *harness) faultyPump() (*pump.Pump, *faultyStore) {
	h.t.Helper()
	fs := &faultyStore{}
	p := h.newPump(func(o *pump.Options) {
		fs.Store = o.Store
		o.Store = fs
	})
	return p, fs
}

// headRow is the mailbox row id as the pump reads it at the head (the
// last row put).
func (h *harness) headRow(id int64, body string) pumpdata.Row {
	return pumpdata.Row{ID: id, Received: h.nextRow, Size: int64(len(body)), Body: []byte(body)}
}

// traceRows are message id's trace rows, oldest first: the result, and the
// flags in brackets when it has any.
func (h *harness) traceRows(id int64) []string {
	h.t.Helper()
	var out []string
	for _, r := range h.traced(id) {
		if len(r.Flags) == 0 {
			out = append(out, r.Result)
			continue
		}
		flags := slices.Sorted(slices.Values(r.Flags))
		out = append(out, fmt.Sprintf("%s %v", r.Result, flags))
	}
	return out
}

// One trace row per processing attempt of a snapshot (processing rules R5.6), also
// for an attempt its pump did not finish: a batch stopped by a shutdown or a
// lost fence leaves its row, flagged SHUTDOWN or FENCED; a COMMIT that
// failed without the server's answer is traced COMMIT_UNKNOWN, and the next
// start of a pump resolves it from what committed — COMMITTED when it had
// (the message is then only written back, never applied again),
// ROLLED_BACK when it had not (the retry is another attempt, another row).
func TestEveryAttemptIsTracedAndAnUnknownCommitResolved(t *testing.T) {
	t.Parallel()
	reset := errors.New("read tcp 127.0.0.1:5432: connection reset by peer")
	cases := []struct {
		name string
		// stop makes the batch fail: it is given the cancel of the
		// batch's context.
		stop func(fs *faultyStore, cancel context.CancelCauseFunc)
		// before and after the next start of a pump; final after it
		// drained the mailbox.
		before, after, final []string
	}{{
		name: "shut down while the batch writes",
		stop: func(fs *faultyStore, cancel context.CancelCauseFunc) {
			fs.write = func(ctx context.Context, w pump.Writes) error {
				if len(w.Archive) == 0 {
					return nil
				}
				cancel(nil)
				return fmt.Errorf("finish batch: %w", ctx.Err())
			}
		},
		before: []string{"ROLLED_BACK [SHUTDOWN]"},
		after:  []string{"ROLLED_BACK [SHUTDOWN]"},
		final:  []string{"ROLLED_BACK [SHUTDOWN]", pumpdata.TraceCommitted},
	}, {
		name: "fenced while the COMMIT waits",
		stop: func(fs *faultyStore, cancel context.CancelCauseFunc) {
			fs.commit = func(ctx context.Context, tx pump.Tx) error {
				cancel(fmt.Errorf("renew the fencing epoch: %w", pumpdata.ErrFenced))
				_ = tx.Rollback(context.WithoutCancel(ctx))
				return fmt.Errorf("commit: %w", ctx.Err())
			}
		},
		before: []string{"COMMIT_UNKNOWN [FENCED]"},
		after:  []string{"ROLLED_BACK [FENCED]"},
		final:  []string{"ROLLED_BACK [FENCED]", pumpdata.TraceCommitted},
	}, {
		name: "the COMMIT's answer is lost although it committed",
		stop: func(fs *faultyStore, _ context.CancelCauseFunc) {
			fs.commit = func(ctx context.Context, tx pump.Tx) error {
				if err := tx.Commit(ctx); err != nil {
					return err
				}
				return fmt.Errorf("commit: %w", reset)
			}
		},
		before: []string{pumpdata.TraceCommitUnknown},
		after:  []string{pumpdata.TraceCommitted},
		final:  []string{pumpdata.TraceCommitted},
	}, {
		name: "the COMMIT fails without an answer and did not commit",
		stop: func(fs *faultyStore, _ context.CancelCauseFunc) {
			fs.commit = func(ctx context.Context, tx pump.Tx) error {
				_ = tx.Rollback(ctx)
				return fmt.Errorf("commit: %w", reset)
			}
		},
		before: []string{pumpdata.TraceCommitUnknown},
		after:  []string{pumpdata.TraceRolledBack},
		final:  []string{pumpdata.TraceRolledBack, pumpdata.TraceCommitted},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, h *harness) {
				body := h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")) // a window push
				id := h.put(body)
				p, fs := h.faultyPump()
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				fs.set(func(fs *faultyStore) { c.stop(fs, cancel) })
				out := p.ApplyBatch(ctx, []pumpdata.Row{h.headRow(id, body)})
				if out.Whole {
					t.Fatalf("the batch committed whole: %+v", out)
				}
				fs.set(func(fs *faultyStore) { fs.write, fs.commit = nil, nil })
				if diff := cmp.Diff(c.before, h.traceRows(id)); diff != "" {
					t.Errorf("trace rows of the stopped attempt (-want +got):\n%s", diff)
				}
				next := h.newPump() // its start resolves what is unknown
				if diff := cmp.Diff(c.after, h.traceRows(id)); diff != "" {
					t.Errorf("trace rows after the next start (-want +got):\n%s", diff)
				}
				h.drain(next)
				if diff := cmp.Diff(c.final, h.traceRows(id)); diff != "" {
					t.Errorf("trace rows after the drain (-want +got):\n%s", diff)
				}
				h.wantRow(id, pumpdata.StatusSucceeded, "")
				// Applied exactly once, whatever the attempts: one event
				// per flight.
				if events, _ := h.events(id); events != 2 {
					t.Errorf("outbox rows of the message: %d, want 2", events)
				}
			})
		})
	}
}

// While the head retries an infrastructure failure it is FAILED (INFRA)
// with its attempt count (processing rules R9), visible in `flightfeed dead` and
// counted in the status, until it succeeds. When the database itself is
// what fails, nothing can be written then: the attempts are counted in
// memory and the first record that reaches the database carries them.
func TestInfraFailureIsRecordedFailedWithItsAttempts(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		body := h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>")
		id := h.put(body)
		row := h.headRow(id, body)
		p, fs := h.faultyPump()
		down := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
		diskFull := &pgconn.PgError{Code: "53100", Message: "could not extend file: No space left on device"}
		fs.set(func(fs *faultyStore) { fs.begin = func() error { return down } })
		for range 2 {
			if out := p.ApplyBatch(t.Context(), []pumpdata.Row{row}); !out.Blocked {
				t.Fatalf("database down: %+v", out)
			}
		}
		if n := h.statusCount(pumpdata.StatusFailed); n != 0 {
			t.Fatalf("FAILED rows written while the database is down: %d", n)
		}
		// The database answers again, but the batch's write fails.
		fs.set(func(fs *faultyStore) {
			fs.begin = nil
			fs.write = func(_ context.Context, w pump.Writes) error {
				if len(w.Archive) > 0 {
					return fmt.Errorf("finish batch: %w", diskFull)
				}
				return nil
			}
		})
		for i, want := range []int{3, 4} {
			if out := p.ApplyBatch(t.Context(), []pumpdata.Row{row}); !out.Blocked || out.Wait <= 0 {
				t.Fatalf("attempt %d: %+v, want blocked with backoff", want, out)
			}
			status, reason, _, attempts := h.procState(id)
			if status != pumpdata.StatusFailed || reason != pump.ReasonInfra || attempts != want {
				t.Fatalf("after attempt %d: proc_state %s %s, %d attempts; want FAILED INFRA, %d", i+3, status, reason, attempts, want)
			}
		}
		st := p.Status()
		if st.Counts[pumpdata.StatusFailed] != 4 || st.HeadID != id || st.HeadBlockedSince.IsZero() {
			t.Fatalf("status: FAILED %d, head %d blocked since %v; want 4 FAILED, head %d blocked",
				st.Counts[pumpdata.StatusFailed], st.HeadID, st.HeadBlockedSince, id)
		}
		if h.store != nil {
			dead, err := h.store.DeadMessages(t.Context(), store.DeadFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(dead) != 1 || dead[0].MessageID != id || dead[0].Status != pumpdata.StatusFailed || dead[0].Reason != pump.ReasonInfra ||
				dead[0].Attempts != 4 || dead[0].Type != "FLOP" || !strings.HasPrefix(dead[0].Note, "INFRA: ") {
				t.Fatalf("flightfeed dead lists %+v", dead)
			}
		}
		if r := h.row(id); r.Processed {
			t.Fatalf("a FAILED message left the head: mailbox row %+v", r)
		}
		fs.set(func(fs *faultyStore) { fs.write = nil })
		if out := p.ApplyBatch(t.Context(), []pumpdata.Row{row}); !out.Whole {
			t.Fatalf("recovered: %+v", out)
		}
		if status, reason, _, attempts := h.procState(id); status != pumpdata.StatusSucceeded || reason != "" || attempts != 5 {
			t.Fatalf("after the database recovered: proc_state %s %q, %d attempts; want SUCCEEDED, 5", status, reason, attempts)
		}
	})
}

// When the database is down for every attempt and comes back for the one
// that succeeds, that result carries all of them.
func TestAttemptsTheDatabaseCouldNotRecordAreCountedBySuccess(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		body := h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>")
		id := h.put(body)
		row := h.headRow(id, body)
		p, fs := h.faultyPump()
		fs.set(func(fs *faultyStore) {
			fs.begin = func() error { return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused") }
		})
		for range 3 {
			p.ApplyBatch(t.Context(), []pumpdata.Row{row})
		}
		fs.set(func(fs *faultyStore) { fs.begin = nil })
		if out := p.ApplyBatch(t.Context(), []pumpdata.Row{row}); !out.Whole {
			t.Fatalf("recovered: %+v", out)
		}
		if status, _, _, attempts := h.procState(id); status != pumpdata.StatusSucceeded || attempts != 4 {
			t.Fatalf("proc_state %s, %d attempts; want SUCCEEDED, 4", status, attempts)
		}
	})
}

// A replay's attempt that does not commit is traced too (processing rules R5.6:
// one row per attempt), ROLLED_BACK like a live batch's; the request stays
// PENDING and the next pass applies it, traced COMMITTED.
func TestFailedReplayAttemptIsTraced(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
		bad := h.put(h.schd("DNLD", fltr(1, "CA1X", "09"), fltr(2, "CA2X", "09", "<CNCL>31FEB261000</CNCL>")))
		p, fs := h.faultyPump()
		h.drain(p)
		h.wantRow(bad, pumpdata.StatusDead, "BAD_TIME")
		before := h.traceCount(bad, pumpdata.TraceRolledBack, "")

		refused := &pgconn.PgError{Code: "40001", Message: "could not serialize access due to concurrent update"}
		var failures atomic.Int32
		fs.set(func(fs *faultyStore) {
			fs.write = func(_ context.Context, w pump.Writes) error {
				if w.Replay != nil && w.Replay.State == pumpdata.ReplayDone && failures.CompareAndSwap(0, 1) {
					return fmt.Errorf("finish replay: %w", refused)
				}
				return nil
			}
		})
		h.requestReplay(bad, pumpdata.ReplaySkipConflicts)
		h.runUntil(p, "the replay done after its failed attempt", func() (bool, string) {
			r := h.replayOf(bad)
			return r.State == pumpdata.ReplayDone, fmt.Sprint(r)
		})
		if n := failures.Load(); n != 1 {
			t.Fatalf("the replay's write failed %d times, want 1: the scenario proves nothing", n)
		}
		if got := h.traceCount(bad, pumpdata.TraceRolledBack, "") - before; got != 1 {
			t.Errorf("ROLLED_BACK trace rows of the failed replay attempt: %d, want 1 (rows %v)", got, h.traceRows(bad))
		}
		if got := h.traceCount(bad, pumpdata.TraceCommitted, ""); got != 1 {
			t.Errorf("COMMITTED trace rows: %d, want 1, the replay that applied (rows %v)", got, h.traceRows(bad))
		}
	}, "mailbox: {dnldFullDay: true}")
}
