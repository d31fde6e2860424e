package pump_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/snapshot"
)

type doneObserver struct {
	pump.NopObserver
	mu   sync.Mutex
	done map[string]int
}

func (o *doneObserver) MessageDone(msgType, styp, result string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done[msgType+"/"+styp+" "+result]++
}

func (o *doneObserver) take() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.done
	o.done = map[string]int{}
	return out
}

// A replay's outcome counts like a live message's: in the status counts, in
// the messages metric (Observer.MessageDone), and a DEAD replay is a notice
// (a warning Event) of its reason. Its SEQN, from earlier in the session,
// raises no SEQN_REGRESSION.
func TestReplaysCountLikeLiveMessages(t *testing.T) {
	t.Parallel()
	eachBackend(t, replaysCountLikeLiveMessages, "mailbox: {dnldFullDay: true}")
}

func replaysCountLikeLiveMessages(t *testing.T, h *harness) {
	h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
	bad := h.put(h.schd("DNLD", fltr(3, "CA3", "10"), fltr(1, "CA1", "10")))   // DAY_MISMATCH
	stale := h.put(h.schd("DNLD", fltr(4, "CA4", "10"), fltr(2, "CA2", "10"))) // DAY_MISMATCH
	h.put(h.flop("FDEL", 1, ""))                                               // frees FLID 1 for bad
	obs := &doneObserver{done: map[string]int{}}
	p := h.newPump(func(o *pump.Options) { o.Observer = obs })
	h.drain(p)
	h.wantRow(bad, pumpdata.StatusDead, snapshot.ReasonDayMismatch)
	h.wantRow(stale, pumpdata.StatusDead, snapshot.ReasonDayMismatch)
	before := p.Status().Counts
	obs.take()
	p.DrainNotices()

	for _, id := range []int64{bad, stale} {
		h.requestReplay(id, pumpdata.ReplayAsNew)
	}
	h.runUntil(p, "both replays done", func() (bool, string) {
		n := h.replaysDone("", "")
		return n == 2, fmt.Sprintf("%d replays done", n)
	})

	after := p.Status().Counts
	got := map[string]int64{}
	for _, s := range []string{pumpdata.StatusSucceeded, pumpdata.StatusDead} {
		got[s] = after[s] - before[s]
	}
	if diff := cmp.Diff(map[string]int64{pumpdata.StatusSucceeded: 1, pumpdata.StatusDead: 1}, got); diff != "" {
		t.Errorf("status counts of the replays (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"SCHD/DNLD SUCCEEDED": 1, "SCHD/DNLD DEAD": 1}, obs.take()); diff != "" {
		t.Errorf("messages counted (-want +got):\n%s", diff)
	}
	// A replay's SEQN is not compared with the session's: the replayed
	// message is older than everything processed since.
	if n := h.flaggedTraces(pump.FlagSeqnRegression); n != 0 {
		t.Errorf("%d trace rows flagged SEQN_REGRESSION, want none", n)
	}
	var dead []string
	for _, n := range p.DrainNotices() {
		if n.Kind != pump.NoticeSnapshotFlag {
			dead = append(dead, fmt.Sprintf("%s %d %s", n.Kind, n.MessageID, n.Reason))
		}
	}
	if diff := cmp.Diff([]string{fmt.Sprintf("%s %d %s", pump.NoticeDayMismatch, stale, snapshot.ReasonDayMismatch)}, dead); diff != "" {
		t.Errorf("notices of the replays (-want +got):\n%s", diff)
	}
}

// A replay whose application panics ends DONE with DEAD (INTERNAL), like a
// live message's panic: nothing of it is applied, the pump goes on, and the
// request is not taken again (left PENDING, it would panic every pass).
func TestReplayPanicEndsTheRequest(t *testing.T) {
	t.Parallel()
	eachBackend(t, replayPanicEndsTheRequest, "mailbox: {dnldFullDay: true}")
}

func replayPanicEndsTheRequest(t *testing.T, h *harness) {
	h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
	bad := h.put(h.schd("DNLD", fltr(3, "CA3", "10"), fltr(1, "CA1", "10"))) // DAY_MISMATCH
	h.put(h.flop("FDEL", 1, ""))                                             // frees FLID 1 for bad
	obs := &doneObserver{done: map[string]int{}}
	p := h.newPump(func(o *pump.Options) { o.Observer = obs })
	h.drain(p)
	h.wantRow(bad, pumpdata.StatusDead, snapshot.ReasonDayMismatch)
	before := h.export()
	obs.take()

	p.InjectPanics(nil, func(id int64) {
		if id == bad {
			panic("injected: a bug of a write path")
		}
	})
	h.requestReplay(bad, pumpdata.ReplayAsNew)
	h.runUntil(p, "the replay done", func() (bool, string) {
		n := h.replaysDone(pumpdata.StatusDead, pump.ReasonInternal)
		return n == 1, fmt.Sprintf("%d replays DONE with DEAD (INTERNAL)", n)
	})
	if after := h.export(); after != before {
		t.Errorf("the panicking replay changed the flights:\n%s\nwant\n%s", after, before)
	}
	if status, reason, _, _ := h.procState(bad); status != pumpdata.StatusDead || reason != snapshot.ReasonDayMismatch {
		t.Errorf("the message after the replay: %s %s, want it as it was", status, reason)
	}
	if diff := cmp.Diff(map[string]int{"SCHD/DNLD DEAD": 1}, obs.take()); diff != "" {
		t.Errorf("messages counted (-want +got):\n%s", diff)
	}
}
