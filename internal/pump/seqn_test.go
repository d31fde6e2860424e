package pump_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
)

type seqnObserver struct {
	pump.NopObserver
	mu          sync.Mutex
	regressions int
}

func (o *seqnObserver) SeqnRegression() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.regressions++
}

// A SEQN regression on an FLOP, an ADFT or an FDEL is an alert, not only a
// flag in proc_state (processing rules R9): counted (Observer.SeqnRegression) and a
// SeqnRegression notice (a warning Event) naming both SEQNs; the message is
// applied as usual. A rolled-back batch counts nothing: its retry does.
func TestSeqnRegressionOfAnIncrementIsAlerted(t *testing.T) {
	t.Parallel()
	var m sisMessages
	lower := func(body string, seqn int) string {
		return strings.Replace(body, fmt.Sprintf("<SEQN>%d</SEQN>", m.seqn+100), fmt.Sprintf("<SEQN>%d</SEQN>", seqn), 1)
	}
	bodies := []string{
		m.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"), // SEQN 101
		m.flop("ESTT", 2, "<ESTT>09SEP260931</ESTT>"), // 102
		lower(m.flop("ESTT", 1, "<ESTT>09SEP260932</ESTT>"), 50),
		m.flop("FDEL", 2, ""),            // 104: after 50, no regression
		lower(m.flop("FDEL", 1, ""), 60), // below 104
	}
	st := newMemStore(&pumptest.Fault{Call: "commit", Err: fmt.Errorf("read tcp 127.0.0.1:5432: connection reset by peer"), Times: 1})
	obs := &seqnObserver{}
	p := observedMemPump(t, st, pumptest.NewInbox(), obs)
	rows := memRows(bodies...)
	p.ApplyBatch(t.Context(), rows) // rolled back
	if got := describe(p.ApplyBatch(t.Context(), rows)); got != "whole" {
		t.Fatalf("retried batch: %s", got)
	}
	if diff := cmp.Diff([]string{"1 SUCCEEDED", "2 SUCCEEDED", "3 SUCCEEDED", "4 SUCCEEDED", "5 SUCCEEDED"}, st.Committed()); diff != "" {
		t.Errorf("committed (-want +got):\n%s", diff)
	}
	obs.mu.Lock()
	if obs.regressions != 2 {
		t.Errorf("SEQN regressions counted: %d, want 2", obs.regressions)
	}
	obs.mu.Unlock()
	var noticed []string
	for _, n := range p.DrainNotices() {
		noticed = append(noticed, fmt.Sprintf("%s %d %s: %s", n.Kind, n.MessageID, n.Reason, n.Detail))
	}
	want := []string{
		"SeqnRegression 3 SEQN_REGRESSION: FLOP/ESTT from AODB: SEQN 50 after 102 in this session",
		"SeqnRegression 5 SEQN_REGRESSION: FLOP/FDEL from AODB: SEQN 60 after 104 in this session",
	}
	if diff := cmp.Diff(want, noticed); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
}
