package pump_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

func TestMessagesFlowThroughInFIFOOrder(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		window := h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
		gate := h.put(h.flop("GTDT", 1, `<GTDT GTNO="1"><GATE>A1</GATE></GTDT>`))
		estt := h.put(h.flop("ESTT", 3, `<ESTT>09SEP260930</ESTT>`))
		del := h.put(h.flop("FDEL", 2, ""))
		p := h.newPump()
		h.drain(p)

		for _, id := range []int64{window, gate, estt, del} {
			r := h.wantRow(id, pumpdata.StatusSucceeded, "")
			if r.Note != "" {
				t.Errorf("row %d: a SUCCEEDED row carries note %q", id, r.Note)
			}
		}
		got := h.flights()
		if len(got) != 2 || got[1].Lists["GTDT"][0]["GATE"] != "A1" || got[3].Scalars["ESTT"] != "09SEP260930" {
			t.Fatalf("state: %+v", got)
		}
		if got[1].OperationDay != "" {
			t.Fatal("a DNLD window set the operation day")
		}
		type intents struct{ Archived, BackfillTodo int }
		if diff := cmp.Diff(intents{Archived: 4}, intents{h.archivedCount(), h.intents()}); diff != "" {
			t.Fatalf("archive or backfill intents (-want +got):\n%s", diff)
		}
		st := p.Status()
		if st.LastProcessedID != del || st.Counts[pumpdata.StatusSucceeded] != 4 || st.QueueDepth != 0 {
			t.Fatalf("status %+v", st)
		}
	})
}

// Each DEAD row of the failure matrix: terminal at once, reason in the
// mailbox note, nothing else changed, the next message is processed.
func TestDeadMessagesReleaseTheHead(t *testing.T) {
	t.Parallel()
	var m sisMessages // each case numbers its own SEQNs
	cases := []struct {
		name, body, reason string
	}{
		{"malformed XML", `<MSG><META><SNDR>AODB</SNDR>`, "MALFORMED_XML"},
		{"RECS mismatch", strings.Replace(m.schd("DNLD", fltr(5, "X", "09")), "<RECS>1</RECS>", "<RECS>2</RECS>", 1), "RECS_MISMATCH"},
		{"over capacity", strings.Replace(m.schd("DNLD", fltr(5, "X", "09")), "<RECS>1</RECS>", "<RECS>10000</RECS>", 1), "RECS_OUT_OF_RANGE"},
		{"non-numeric FLID", strings.Replace(m.flop("ESTT", 0, "<ESTT>09SEP260930</ESTT>"), "<FLID>0</FLID>", "<FLID>12A</FLID>", 1), "BAD_FLID"},
		{"sequence 0 mixed", m.flop("GTDT", 5, `<GTDT GTNO="1"><GATE>A1</GATE></GTDT><GTDT GTNO="0"/>`), "SEQ_ZERO_MIXED"},
		{"oversize", m.schd("DNLD", fltr(5, "X", "09", "<REMC>"+strings.Repeat("x", 5000)+"</REMC>")), "OVERSIZE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, h *harness) {
				h.seqn = 1000 // after the bodies built above
				body := c.body
				bad := h.put(body)
				next := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
				h.drain(h.newPump())
				h.wantRow(bad, pumpdata.StatusDead, c.reason)
				if status, reason, _, _ := h.procState(bad); status != pumpdata.StatusDead || reason != c.reason {
					t.Fatalf("proc_state %s/%s", status, reason)
				}
				h.wantRow(next, pumpdata.StatusSucceeded, "")
				if f := h.flights(); len(f) != 1 || f[9].Scalars["ESTT"] == "" {
					t.Fatalf("state after a DEAD message: %+v", f)
				}
				if held, _, _, _ := h.archived(bad); !held {
					t.Fatal("the DEAD message was not archived")
				}
				if events, _ := h.events(bad); events != 0 {
					t.Fatal("the DEAD message queued events")
				}
			}, "mailbox: {maxMessageBytes: 4096}")
		})
	}
}

func TestOversizeIsArchivedTruncatedNeverParsed(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		id := h.put(strings.Repeat("<x>", 3000))
		h.drain(h.newPump())
		h.wantRow(id, pumpdata.StatusDead, "OVERSIZE")
		held, size, kept, truncated := h.archived(id)
		if !held || size != 9000 || kept != 2048 || !truncated {
			t.Fatalf("archive: size %d kept %d truncated %v", size, kept, truncated)
		}
	}, "mailbox: {maxMessageBytes: 2048}")
}

// FAILED(UNSUPPORTED): retried up to the limit with the head waiting, then
// DEAD, then the next message.
func TestUnsupportedRetriesThenDead(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		ref := h.put(`<MSG>` + h.meta("ZZZZ", "DNLD") + `<ZZZZ><RECS>1</RECS></ZZZZ></MSG>`)
		next := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
		p := h.newPump()
		h.drain(p)
		h.wantRow(ref, pumpdata.StatusDead, "UNKNOWN_TYPE")
		status, _, _, attempts := h.procState(ref)
		if status != pumpdata.StatusDead || attempts != 3 {
			t.Fatalf("unsupported: %s after %d attempts, want DEAD after 3 (limit 2)", status, attempts)
		}
		h.wantRow(next, pumpdata.StatusSucceeded, "")
		// status.pump.counts: the two attempts that ended FAILED, then one DEAD.
		if c := p.Status().Counts; c[pumpdata.StatusFailed] != 2 || c[pumpdata.StatusDead] != 1 || c[pumpdata.StatusSucceeded] != 1 {
			t.Fatalf("counts %v, want FAILED 2, DEAD 1, SUCCEEDED 1", c)
		}
	})
}

func TestUnsupportedBlocksTheHeadWhileRetrying(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		ref := h.put(`<MSG>` + h.meta("ZZZZ", "DNLD") + `<ZZZZ><RECS>1</RECS></ZZZZ></MSG>`)
		next := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
		p := h.newPump()
		h.runUntil(p, "the head waiting on its UNSUPPORTED retry", headBlocked(p, ref, "UNKNOWN_TYPE"))
		if r := h.row(ref); r.Processed {
			t.Fatalf("a FAILED row was backfilled as terminal: %+v", r)
		}
		if status, reason, _, _ := h.procState(ref); status != pumpdata.StatusFailed || reason != "UNKNOWN_TYPE" {
			t.Fatalf("proc_state %s %s", status, reason)
		}
		type behind struct {
			NextProcessed bool
			Flights       int
		}
		if diff := cmp.Diff(behind{}, behind{h.row(next).Processed, len(h.flights())}); diff != "" {
			t.Fatalf("the message behind a waiting head was processed (-want +got):\n%s", diff)
		}
		if st := p.Status(); st.HeadID != ref || st.HeadBlockedSince.IsZero() || !strings.Contains(st.HeadLastError, "UNKNOWN_TYPE") {
			t.Fatalf("blocked head not visible: %+v", st)
		}
	}, "pump: {backoffInitial: 1h, backoffMax: 1h, unsupportedRetryLimit: 5}")
}

// FAILED(INFRA): the batch rolls back, the head stays blocked with backoff,
// and once the fault is gone the same message succeeds — nothing lost.
func TestInfrastructureFailureBlocksThenRecovers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	first := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
	second := h.put(h.flop("ESTT", 10, "<ESTT>09SEP260931</ESTT>"))
	// The fault: a table the pump writes in every message is missing.
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE msg_archive RENAME TO msg_archive_away`); err != nil {
		t.Fatal(err)
	}
	p := h.newPump()
	// Blocked, and the head, tried alone, recorded FAILED (INFRA) (processing rules
	// R9) in a transaction of its own.
	blocked := headBlocked(p, first, "msg_archive")
	h.runUntil(p, "the head blocked on the missing table and FAILED", func() (bool, string) {
		ok, why := blocked()
		failed := h.count(`SELECT count(*) FROM proc_state WHERE message_id = $1 AND status = 'FAILED' AND reason = 'INFRA'`, first)
		return ok && failed == 1, fmt.Sprintf("%s; FAILED (INFRA) rows of the head: %d", why, failed)
	})
	type leftovers struct {
		FirstProcessed      bool
		Flights, ProcStates int
	}
	// Nothing of the failed transactions: only the head's FAILED.
	if diff := cmp.Diff(leftovers{ProcStates: 1}, leftovers{h.row(first).Processed, len(h.flights()), h.count(`SELECT count(*) FROM proc_state`)}); diff != "" {
		t.Fatalf("a failed transaction left something behind (-want +got):\n%s", diff)
	}
	st := p.Status()
	if st.HeadID != first || st.HeadBlockedSince.IsZero() || !strings.Contains(st.HeadLastError, "msg_archive") {
		t.Fatalf("blocked head not visible: %+v", st)
	}
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE msg_archive_away RENAME TO msg_archive`); err != nil {
		t.Fatal(err)
	}
	h.drain(p)
	h.wantRow(first, pumpdata.StatusSucceeded, "")
	h.wantRow(second, pumpdata.StatusSucceeded, "")
	if st := p.Status(); !st.HeadBlockedSince.IsZero() || len(h.flights()) != 2 {
		t.Fatalf("after recovery: %+v", st)
	}
}

// Past infraRetryLimit the head is DEAD (INFRA) — also when the failing
// table is the raw archive itself, which the give-up writes too: then it
// records the DEAD without the raw text (no archive row, so no replay),
// and the result carries only the reason and the error, not the body.
func TestInfraRetryLimitMakesTheHeadDead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "pump: {backoffInitial: 1ms, backoffMax: 2ms, infraRetryLimit: 2}")
	body := h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>")
	first := h.put(body)
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE msg_archive RENAME TO msg_archive_away`); err != nil {
		t.Fatal(err)
	}
	h.drain(h.newPump())
	// Given up on the attempt after the limit of two.
	const note = `INFRA: gave up after 3 attempts: `
	r := h.wantRow(first, pumpdata.StatusDead, note)
	status, reason, _, attempts := h.procState(first)
	type result struct {
		Status, Reason string
		Attempts       int
	}
	if diff := cmp.Diff(result{pumpdata.StatusDead, pump.ReasonInfra, 3}, result{status, reason, attempts}); diff != "" {
		t.Fatalf("the head's processing state (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.Note, "msg_archive") || strings.Contains(r.Note, "09SEP260930") || strings.Contains(r.Note, "<MSG>") {
		t.Fatalf("note %q: want the archive's error, never the message's text", r.Note)
	}
	if n := h.count(`SELECT count(*) FROM msg_archive_away`); n != 0 {
		t.Fatalf("%d archive rows written while the archive failed", n)
	}
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE msg_archive_away RENAME TO msg_archive`); err != nil {
		t.Fatal(err)
	}
	if held, _, _, _ := h.archived(first); held {
		t.Fatal("the DEAD head's raw text is archived, though the archive was what failed")
	}
	if flights := h.flights(); len(flights) != 0 {
		t.Fatalf("the DEAD head changed state: %+v", flights)
	}
}

// A message given up after infraRetryLimit keeps its raw text in the
// archive, so that once the cause is fixed an operator replays it (before,
// replay refused it: "its raw text is not archived").
func TestAMessageGivenUpCanBeReplayed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "pump: {backoffInitial: 1ms, backoffMax: 2ms, infraRetryLimit: 1}")
	id := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE flight_schd RENAME TO flight_schd_away`); err != nil {
		t.Fatal(err)
	}
	p := h.newPump()
	h.drain(p)
	h.wantRow(id, pumpdata.StatusDead, "INFRA")
	if held, size, kept, truncated := h.archived(id); !held || kept == 0 || int64(kept) != size || truncated {
		t.Fatalf("the given-up message's raw text: held %v, %d of %d bytes, truncated %v", held, kept, size, truncated)
	}
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE flight_schd_away RENAME TO flight_schd`); err != nil {
		t.Fatal(err)
	}
	h.requestReplay(id, pumpdata.ReplayAsNew)
	h.runUntil(p, "the replay done", func() (bool, string) {
		r := h.replayOf(id)
		return r.ID != 0 && r.State != pumpdata.ReplayPending, fmt.Sprint(r)
	})
	if r := h.replayOf(id); r.State != pumpdata.ReplayDone || r.Result != pumpdata.StatusSucceeded {
		t.Fatalf("replay %+v: want DONE, SUCCEEDED", r)
	}
	if f := h.flights(); f[9].Scalars["ESTT"] != "09SEP260930" {
		t.Fatalf("the replayed message did not apply: %+v", f[9])
	}
}

// A give-up never replaces a committed result (processing rules R7.2): the head's
// message SUCCEEDED already and only its write-back is redone (an operator
// reset its mailbox row) when the database starts refusing the batch; past
// infraRetryLimit the pump keeps retrying instead of recording it DEAD and
// writing DEAD to the mailbox, and once the fault is gone the SUCCEEDED is
// written back. PostgreSQL only: the fault is a renamed table.
func TestGiveUpNeverReplacesACommittedResult(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "pump: {backoffInitial: 1ms, backoffMax: 2ms, infraRetryLimit: 1}")
	id := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
	h.drain(h.newPump())
	h.wantRow(id, pumpdata.StatusSucceeded, "")
	h.unprocess(id)
	// The batch loads the flight's state (a fresh pump has no cache) from
	// the table that is gone; the give-up's own transaction does not.
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE flight_schd RENAME TO flight_schd_away`); err != nil {
		t.Fatal(err)
	}
	p := h.newPump()
	h.runUntil(p, "three failed attempts past the limit of one, or the result replaced", func() (bool, string) {
		status, reason, _, _ := h.procState(id)
		failed := p.Status().Counts[pumpdata.StatusFailed]
		return failed >= 3 || status != pumpdata.StatusSucceeded, fmt.Sprintf("proc_state %s %s, failed attempts %d", status, reason, failed)
	})
	if status, reason, _, _ := h.procState(id); status != pumpdata.StatusSucceeded {
		t.Fatalf("the give-up replaced the committed SUCCEEDED with %s (%s)", status, reason)
	}
	if r := h.row(id); r.Processed {
		t.Fatalf("the mailbox row was written back during the fault: %+v", r)
	}
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE flight_schd_away RENAME TO flight_schd`); err != nil {
		t.Fatal(err)
	}
	h.drain(p)
	h.wantRow(id, pumpdata.StatusSucceeded, "")
}

// DEAD(PROTOCOL): a snapshot holding a FLID of another day is refused whole;
// the trace log says ROLLED_BACK with DAY_MISMATCH; the next message goes on.
func TestDayMismatchIsDeadProtocol(t *testing.T) {
	t.Parallel()
	eachBackend(t, dayMismatchIsDeadProtocol, "mailbox: {dnldFullDay: true}")
}

func dayMismatchIsDeadProtocol(t *testing.T, h *harness) {
	day9 := h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
	bad := h.put(h.schd("DNLD", fltr(3, "CA3", "10"), fltr(1, "CA1", "10")))
	next := h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"))
	p := h.newPump()
	h.drain(p)
	h.wantRow(day9, pumpdata.StatusSucceeded, "")
	h.wantRow(bad, pumpdata.StatusDead, snapshot.ReasonDayMismatch)
	// The operator turns notices into Kubernetes Events: the refusal, and
	// the trace row's DAY_MISMATCH alert.
	var refusals, alerts []pump.Notice
	for _, n := range p.DrainNotices() {
		if n.Kind == pump.NoticeSnapshotFlag {
			alerts = append(alerts, n)
		} else {
			refusals = append(refusals, n)
		}
	}
	if n := refusals; len(n) != 1 || n[0].MessageID != bad || n[0].Kind != pump.NoticeDayMismatch || n[0].Reason != snapshot.ReasonDayMismatch {
		t.Fatalf("notices %+v", n)
	}
	if n := alerts; len(n) != 1 || n[0].MessageID != bad || n[0].Reason != pump.FlagDayMismatch {
		t.Fatalf("alert notices %+v", n)
	}
	if n := p.DrainNotices(); len(n) != 0 {
		t.Fatalf("notices drained twice: %+v", n)
	}
	h.wantRow(next, pumpdata.StatusSucceeded, "")
	f := h.flights()
	if _, ok := f[3]; ok || f[1].OperationDay != "2026-09-09" {
		t.Fatalf("the refused snapshot changed state: %+v", f)
	}
	if n := h.traceCount(bad, pumpdata.TraceRolledBack, pump.FlagDayMismatch); n != 1 {
		t.Fatalf("trace rows for the refused snapshot: %d", n)
	}
	if n := h.traceCount(day9, pumpdata.TraceCommitted, ""); n != 1 {
		t.Fatalf("trace rows for the committed snapshot: %d", n)
	}
}

// One batch, one savepoint per message: a DEAD message in the middle does
// not undo its neighbours, nor end their batch — the four commit in one
// transaction.
func TestSavepointIsolatesADeadMessageInABatch(t *testing.T) {
	t.Parallel()
	eachBackend(t, savepointIsolatesADeadMessageInABatch, "mailbox: {dnldFullDay: true}")
}

func savepointIsolatesADeadMessageInABatch(t *testing.T, h *harness) {
	ids := []int64{
		h.put(h.schd("DNLD", fltr(1, "CA1", "09"))),
		h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>")),
		h.put(h.schd("DNLD", fltr(1, "CA1", "10"))), // day mismatch
		h.put(h.flop("ESTT", 2, "<ESTT>09SEP260931</ESTT>")),
	}
	// A fresh pump reads a full batch (mailbox.batchSize, 50) at once.
	obs := &batchObserver{}
	h.drain(h.newPump(func(o *pump.Options) { o.Observer = obs }))
	for i, want := range []string{pumpdata.StatusSucceeded, pumpdata.StatusSucceeded, pumpdata.StatusDead, pumpdata.StatusSucceeded} {
		if r := h.row(ids[i]); r.Result != want {
			t.Fatalf("row %d: %+v, want %s", i, r, want)
		}
	}
	if f := h.flights(); f[1].Scalars["ESTT"] != "09SEP260930" || f[2].Scalars["ESTT"] != "09SEP260931" {
		t.Fatalf("neighbours of the DEAD message lost: %+v", f)
	}
	// One batch: the pump committed one transaction of four messages, and
	// the database holds their four results from one transaction.
	obs.mu.Lock()
	batches := slices.Clone(obs.batches)
	obs.mu.Unlock()
	if !slices.Equal(batches, []int{4}) {
		t.Errorf("messages per committed batch %v, want [4]", batches)
	}
	if n := h.resultTransactions(ids); n != 1 {
		t.Errorf("the four results were committed by %d transactions, want 1", n)
	}
}

// Re-sent copies and SEQN rules (processing rules R10.4, R5.6).
func TestIdentityAndSequence(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		orig := h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>")
		a := h.put(orig)
		copyOf := h.put(orig) // same SNDR|TYPE|STYP|SEQN, same payload
		reuse := h.put(strings.Replace(orig, "09SEP260930", "09SEP260945", 1))
		regress := h.put(strings.Replace(h.flop("ESTT", 9, "<ESTT>09SEP261000</ESTT>"), "<SEQN>", "<SEQN>1", 1))
		older := h.put(strings.Replace(h.flop("ESTT", 9, "<ESTT>09SEP261005</ESTT>"), "<SEQN>", "<SEQN>0", 1))
		h.drain(h.newPump())

		h.wantRow(a, pumpdata.StatusSucceeded, "")
		h.wantRow(copyOf, pumpdata.StatusSkipped, pump.ReasonDuplicate)
		h.wantRow(reuse, pumpdata.StatusSucceeded, "")
		if _, _, flags, _ := h.procState(reuse); !slices.Contains(flags, pump.FlagSeqnReuse) {
			t.Fatalf("reuse flags %v", flags)
		}
		h.wantRow(regress, pumpdata.StatusSucceeded, "")
		h.wantRow(older, pumpdata.StatusSucceeded, "")
		if _, _, flags, _ := h.procState(older); !slices.Contains(flags, pump.FlagSeqnRegression) {
			t.Fatalf("a lower SEQN was not flagged: %v", flags)
		}
		if got := h.flights()[9].Scalars["ESTT"]; got != "09SEP261005" {
			t.Fatalf("SEQN regression must only flag, not block: ESTT %s", got)
		}
	})
}

// A row whose result is committed but not written back (crash, mailbox
// down) is only backfilled again, never re-applied.
func TestTerminalRowIsOnlyBackfilledAgain(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		id := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
		h.drain(h.newPump())
		version := h.flights()[9].StateVersion
		h.unprocess(id)
		h.drain(h.newPump())
		h.wantRow(id, pumpdata.StatusSucceeded, "")
		type applied struct {
			Attempts     int
			StateVersion int64
		}
		_, _, _, attempts := h.procState(id)
		if diff := cmp.Diff(applied{1, version}, applied{attempts, h.flights()[9].StateVersion}); diff != "" {
			t.Fatalf("the row was applied twice (-want +got):\n%s", diff)
		}
		if _, records := h.events(id); records != 2 {
			t.Fatal("events duplicated")
		}
	})
}

// Backfill intents registered before a crash are written at start.
func TestBackfillIntentsAreRecoveredAtStart(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		body := h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>")
		id := h.put(body)
		// A committed DEAD result of this very row (same received time and
		// payload) whose backfill never happened.
		h.committedNotWrittenBack(id, body, pumpdata.StatusDead, "MALFORMED_XML", "MALFORMED_XML: test")
		h.drain(h.newPump())
		h.wantRow(id, pumpdata.StatusDead, "MALFORMED_XML")
		type leftovers struct{ Flights, BackfillTodo int }
		if diff := cmp.Diff(leftovers{}, leftovers{len(h.flights()), h.intents()}); diff != "" {
			t.Fatalf("a committed DEAD result was re-applied or its intent kept (-want +got):\n%s", diff)
		}
	})
}

func TestAStalePumpIsFenced(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
		p := h.newPump()
		h.takeOver()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := p.Run(ctx); !errors.Is(err, pump.ErrFenced) {
			t.Fatalf("run = %v, want ErrFenced", err)
		}
		if len(h.flights()) != 0 {
			t.Fatal("a fenced pump wrote state")
		}
	})
}

// A stop while a batch's transaction is open leaves nothing partial: the
// pump is stopped from inside its second batch (five rows a batch), at the
// COMMIT, which fails as a driver fails a call whose context ended. The
// first batch stays committed whole, the second leaves nothing — no
// flight, outbox record, archive row or processing row, and no mailbox row
// written back that the database does not record — and the next pump
// processes the rest.
func TestStopIsClean(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		for i := range 20 {
			h.put(h.flop("ESTT", 100+i, "<ESTT>09SEP260930</ESTT>"))
		}
		p, fs := h.faultyPump()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var batches atomic.Int32
		fs.set(func(s *faultyStore) {
			s.write = func(_ context.Context, w pump.Writes) error {
				if len(w.Results) > 0 {
					batches.Add(1)
				}
				return nil
			}
			s.commit = func(cctx context.Context, tx pump.Tx) error {
				if batches.Load() < 2 {
					return tx.Commit(cctx)
				}
				cancel()
				return fmt.Errorf("commit: %w", cctx.Err())
			}
		})
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		if err := <-done; err != nil {
			t.Fatalf("run after cancel: %v", err)
		}
		// The stop came after a whole batch had committed, and before the
		// mailbox was done: the check below compares something.
		processed := h.statusCount(pumpdata.StatusSucceeded)
		if processed < 1 || processed >= 20 {
			t.Fatalf("%d messages processed before the stop, want some but not all", processed)
		}
		// Whatever was committed is complete: every processed row has its
		// flight, its two records, its archive row and its processing row;
		// nothing of the batch the stop interrupted is anywhere.
		type state struct{ Flights, Records, Archived, ProcStates int }
		_, records := h.events(0)
		got := state{len(h.flights()), records, h.archivedCount(), h.procStates()}
		if diff := cmp.Diff(state{processed, 2 * processed, processed, processed}, got); diff != "" {
			t.Fatalf("partial state after a stop with %d messages processed (-want +got):\n%s", processed, diff)
		}
		// The mailbox says no more than the database: a row written back
		// has its committed result; a committed result is written back or
		// its intent is kept for the next start.
		committed := h.processedIDs(pumpdata.StatusSucceeded)
		writtenBack, intents := h.writtenBack()
		for _, id := range writtenBack {
			if !slices.Contains(committed, id) {
				t.Errorf("mailbox row %d carries a result the database does not record (committed: %v)", id, committed)
			}
		}
		for _, id := range committed {
			if !slices.Contains(writtenBack, id) && !slices.Contains(intents, id) {
				t.Errorf("message %d: committed, neither written back nor its intent kept", id)
			}
		}
		h.drain(h.newPump())
		if writtenBack, _ := h.writtenBack(); len(h.flights()) != 20 || h.statusCount(pumpdata.StatusSucceeded) != 20 || len(writtenBack) != 20 {
			t.Fatal("messages lost across a stop")
		}
	}, "mailbox: {batchSize: 5}")
}

func TestHistorySweepMovesFinishedFlights(t *testing.T) {
	t.Parallel()
	eachBackend(t, historySweepMovesFinishedFlights, "history: {scheduledAge: 48h}")
}

func historySweepMovesFinishedFlights(t *testing.T, h *harness) {
	// SODT 2026-09-05 is more than 48 h before testNow; 09-09 is not.
	old := h.put(h.flop("SODT", 1, "<SODT>05SEP260800</SODT>"))
	fresh := h.put(h.flop("SODT", 2, "<SODT>09SEP260800</SODT>"))
	h.drain(h.newPump())
	h.wantRow(old, pumpdata.StatusSucceeded, "")
	h.wantRow(fresh, pumpdata.StatusSucceeded, "")
	if len(h.flights()) != 2 {
		t.Fatal("flights not created")
	}
	// Lifecycle jobs run at start and every sweepInterval, on the FIFO.
	h.drain(h.newPump())
	f := h.flights()
	if _, ok := f[1]; ok {
		t.Fatal("finished flight still current")
	}
	if _, ok := f[2]; !ok {
		t.Fatal("a current flight was swept")
	}
	reasons, states := h.history(1)
	if len(reasons) != 1 || reasons[0] != pumpdata.HistoryScheduled || !strings.Contains(strings.ReplaceAll(states[0], " ", ""), `"SODT":"05SEP260800"`) {
		t.Fatalf("history %v %v", reasons, states)
	}
	if h.tombstones(1) != 1 {
		t.Fatal("no tombstone for the swept flight")
	}
}

// A message whose data the database itself refuses (a constraint) is DEAD
// with DATA_REJECTED; its neighbours in the same batch are applied; the
// head never blocks on it.
func TestDataTheDatabaseRefusesIsDead(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE flight_schd ADD CONSTRAINT test_refuse CHECK (flno IS DISTINCT FROM 'REFUSED')`); err != nil {
		t.Fatal(err)
	}
	ids := []int64{
		h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>")),
		h.put(h.flop("FLNO", 2, "<FLNO>REFUSED</FLNO>")),
		h.put(h.flop("ESTT", 3, "<ESTT>09SEP260931</ESTT>")),
	}
	p := h.newPump()
	h.drain(p)
	h.wantRow(ids[0], pumpdata.StatusSucceeded, "")
	h.wantRow(ids[1], pumpdata.StatusDead, pump.ReasonDataRejected)
	h.wantRow(ids[2], pumpdata.StatusSucceeded, "")
	f := h.flights()
	if _, ok := f[2]; ok || len(f) != 2 {
		t.Fatalf("state: %+v", f)
	}
	if h.count(`SELECT count(*) FROM msg_event WHERE message_id = $1`, ids[1]) != 0 {
		t.Fatal("the refused message queued events")
	}
}

// processing rules R5.5 through the pump: a full-day snapshot whose diff-delete
// would remove a flight that belongs to another day (the ledger and the
// flight's row disagree: data pollution) is DEAD(LEDGER_INCONSISTENT),
// changes nothing, leaves a ROLLED_BACK trace row, and the head moves on.
func TestLedgerInconsistentIsDeadAndChangesNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, ledgerInconsistentIsDeadAndChangesNothing, "mailbox: {dnldFullDay: true}")
}

func ledgerInconsistentIsDeadAndChangesNothing(t *testing.T, h *harness) {
	h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
	p := h.newPump()
	h.drain(p)
	h.setStoredDay(2, "2026-09-10")
	_, events := h.events(0)
	bad := h.put(h.schd("DNLD", fltr(1, "CA1-NEW", "09")))
	next := h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"))
	h.drain(p)

	h.wantRow(bad, pumpdata.StatusDead, snapshot.ReasonLedgerInconsistent)
	h.wantRow(next, pumpdata.StatusSucceeded, "")
	f := h.flights()
	if _, ok := f[2]; !ok || f[1].Scalars["FLNO"] != "CA1" || f[1].Scalars["ESTT"] != "09SEP260930" {
		t.Fatalf("flights after the refused snapshot: %+v", f)
	}
	type ledger struct {
		Day    ledgerDay
		Events int
	}
	_, after := h.events(0)
	if diff := cmp.Diff(ledger{ledgerDay{1, 2}, events + 2}, ledger{h.ledgerDay("2026-09-09"), after}); diff != "" {
		t.Fatalf("the refused snapshot changed the ledger or queued events (-want +got):\n%s", diff)
	}
	if n := h.traceCount(bad, pumpdata.TraceRolledBack, ""); n != 1 {
		t.Fatalf("trace rows of the refused snapshot: %d, want 1", n)
	}
}

// A message the database already holds an archive row for, without its
// processing state (put there by hand, or left from another mailbox), is
// processed all the same: its batch writes a new message with plain
// inserts, meets the row, rolls back as a whole and is retried at once
// with upserts — never DEAD for it.
func TestStrayArchiveRowDoesNotRefuseTheMessage(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		id := h.put(h.flop("ESTT", 4711, "<ESTT>09SEP261000</ESTT>"))
		h.strayArchiveRow(id)
		h.drain(h.newPump())
		h.wantRow(id, "SUCCEEDED", "")
		if status, _, _, _ := h.procState(id); status != "SUCCEEDED" {
			t.Fatalf("processing state %s", status)
		}
	})
}

// A flight a FLOP created for an unknown FLID (no full-day snapshot ever
// included it, no SODT) is moved to history once it has seen no update
// for retention.nullDayDays, on by default (7 days, processing rules R8.3); with
// nullDayDays: 0 it stays.
func TestNullDayFlightsAreRetiredByDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		extra  []string
		retire bool
	}{
		{"default", nil, true},
		{"turned off", []string{"retention: {nullDayDays: 0}"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, h *harness) {
				id := h.put(h.flop("ESTT", 1, "<ESTT>09SEP261000</ESTT>"))
				h.drain(h.newPump())
				h.wantRow(id, pumpdata.StatusSucceeded, "")
				if _, ok := h.flights()[1]; !ok {
					t.Fatal("the FLOP created no flight")
				}
				// A pump started within the retention keeps it.
				h.drain(h.newPump())
				if _, ok := h.flights()[1]; !ok {
					t.Fatal("a flight idle for less than nullDayDays was retired")
				}
				// Seven days idle and a little more: the next pump's lifecycle
				// jobs (run at its start) see the flight as stale.
				h.clock.offset += 7*24*time.Hour + time.Hour
				h.drain(h.newPump())
				_, current := h.flights()[1]
				if current == tc.retire {
					t.Fatalf("flight still current: %v, want %v", current, !tc.retire)
				}
				reasons, _ := h.history(1)
				n := len(slices.DeleteFunc(reasons, func(r string) bool { return r != pumpdata.HistoryNullDay }))
				if want := map[bool]int{true: 1, false: 0}[tc.retire]; n != want {
					t.Fatalf("%d history rows with %s, want %d", n, pumpdata.HistoryNullDay, want)
				}
			}, tc.extra...)
		})
	}
}
