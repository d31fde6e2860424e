package pump_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

type flagObserver struct {
	pump.NopObserver
	mu          sync.Mutex
	flags       map[string]int
	traceFailed int
}

func (o *flagObserver) SnapshotFlag(flag string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flags[flag]++
}

func (o *flagObserver) TraceLogFailed() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.traceFailed++
}

// sentAt re-stamps a harness message's META send time.
func sentAt(body, ddtm string) string {
	return strings.Replace(body, "<DDTM>20260909100000</DDTM>", "<DDTM>"+ddtm+"</DDTM>", 1)
}

// lowerSeqn gives the harness's latest message a SEQN below every other.
func lowerSeqn(h *harness, body string) string {
	return strings.Replace(body, fmt.Sprintf("<SEQN>%d</SEQN>", h.seqn+100), "<SEQN>50</SEQN>", 1)
}

// One trace row per processing attempt of a snapshot (processing rules R5.6),
// whatever its fate, with RESULT and FLAGS apart: committed snapshots carry
// the alerts the seed names (RECS_DROP past mailbox.recsDropPercent,
// OUT_OF_ORDER, EMPTY, SEQN_REGRESSION), refused ones ROLLED_BACK and their
// reason (validation rejects of the decoder included) or DAY_MISMATCH.
// Every flag is counted by flag and becomes a SnapshotFlag notice (a
// warning Event).
func TestEverySnapshotAttemptIsTracedAndFlagged(t *testing.T) {
	t.Parallel()
	eachBackend(t, everySnapshotAttemptIsTracedAndFlagged, "mailbox: {dnldFullDay: true, recsDropPercent: 30}")
}

func everySnapshotAttemptIsTracedAndFlagged(t *testing.T, h *harness) {
	day := func(flids ...int) []string {
		var out []string
		for _, f := range flids {
			out = append(out, fltr(f, fmt.Sprintf("CA%d", f), "09"))
		}
		return out
	}
	type want struct {
		result string
		flags  []string
	}
	cases := []struct {
		body string
		want want
	}{
		{sentAt(h.schd("DNLD", day(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)...), "20260909100000"), want{pumpdata.TraceCommitted, nil}},
		{sentAt(h.schd("DNLD", day(1, 2, 3, 4, 5, 6, 7, 8)...), "20260909100500"), want{pumpdata.TraceCommitted, nil}}, // 20 %: within 30 %
		{sentAt(h.schd("DNLD", day(1, 2, 3, 4, 5)...), "20260909101000"), want{pumpdata.TraceCommitted, []string{snapshot.FlagRecsDrop}}},
		{sentAt(h.schd("DNLD", day(1, 2, 3, 4, 5, 6)...), "20260909093000"), want{pumpdata.TraceCommitted, []string{snapshot.FlagOutOfOrder}}},
		{strings.Replace(h.schd("DNLD", day(1, 2)...), "<RECS>2</RECS>", "<RECS>3</RECS>", 1), want{pumpdata.TraceRolledBack, []string{"RECS_MISMATCH"}}},
		{h.schd("DNLD", append(day(1, 2), day(2)...)...), want{pumpdata.TraceRolledBack, []string{"DUPLICATE_FLID"}}},
		{h.schd("DNLD", fltr(1, "CA1", "10")), want{pumpdata.TraceRolledBack, []string{pump.FlagDayMismatch}}},
		{lowerSeqn(h, h.schd("DNLD", day(1, 2, 3, 4, 5, 6)...)), want{pumpdata.TraceCommitted, []string{pump.FlagSeqnRegression}}},
		{h.schd("DNLD"), want{pumpdata.TraceCommitted, []string{snapshot.FlagEmpty}}},
	}
	ids := make([]int64, len(cases))
	for i, c := range cases {
		ids[i] = h.put(c.body)
	}
	obs := &flagObserver{flags: map[string]int{}}
	p := h.newPump(func(o *pump.Options) { o.Observer = obs })
	h.drain(p)

	wantFlags := map[string]int{}
	for i, c := range cases {
		var got []want
		for _, r := range h.traced(ids[i]) {
			w := want{r.Result, r.Flags}
			if len(w.flags) == 0 {
				w.flags = nil
			}
			got = append(got, w)
		}
		if diff := cmp.Diff([]want{c.want}, got, cmp.AllowUnexported(want{})); diff != "" {
			t.Errorf("message %d (row %d): trace rows (-want +got):\n%s", i, ids[i], diff)
		}
		for _, f := range c.want.flags {
			wantFlags[f]++
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if diff := cmp.Diff(wantFlags, obs.flags); diff != "" {
		t.Errorf("flags counted (-want +got):\n%s", diff)
	}
	noticed := map[string]int{}
	for _, n := range p.DrainNotices() {
		if n.Kind == pump.NoticeSnapshotFlag {
			noticed[n.Reason]++
		}
	}
	if diff := cmp.Diff(wantFlags, noticed); diff != "" {
		t.Errorf("SnapshotFlag notices (-want +got):\n%s", diff)
	}
	// The alerts are on the message's processing state as well.
	if _, _, flags, _ := h.procState(ids[2]); !slices.Contains(flags, snapshot.FlagRecsDrop) {
		t.Errorf("proc_state flags of the shrunk snapshot: %v", flags)
	}
}

// A trace row that cannot be written is counted as an error and changes
// nothing else (processing rules R5.6): the snapshot is committed and SUCCEEDED.
func TestFailedTraceWriteIsCountedAndChangesNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, failedTraceWriteIsCountedAndChangesNothing, "mailbox: {dnldFullDay: true}")
}

func failedTraceWriteIsCountedAndChangesNothing(t *testing.T, h *harness) {
	h.failTraceWrites()
	id := h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
	obs := &flagObserver{flags: map[string]int{}}
	h.drain(h.newPump(func(o *pump.Options) { o.Observer = obs }))
	h.wantRow(id, pumpdata.StatusSucceeded, "")
	if f := h.flights(); len(f) != 2 || f[1].OperationDay != "2026-09-09" {
		t.Fatalf("flights after a failed trace write: %+v", f)
	}
	if v := h.ledgerDay("2026-09-09").Version; v != 1 {
		t.Fatalf("day version %d", v)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.traceFailed != 1 {
		t.Fatalf("trace write failures counted: %d, want 1", obs.traceFailed)
	}
}
