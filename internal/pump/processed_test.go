package pump_test

import (
	"testing"

	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
)

// A batch's results were committed in one transaction: they go back to
// the mailbox with one processed time, the commit's, which the write-back
// sends once for the whole batch (mailbox.Backfill) instead of a value
// per row.
func TestABatchsResultsShareOneProcessedTime(t *testing.T) {
	t.Parallel()
	var m sisMessages
	malformed := `<MSG><META><SNDR>AODB</SNDR>`
	rows := memRows(m.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"), malformed, m.flop("ESTT", 2, "<ESTT>09SEP261030</ESTT>"))
	p := memPump(t, newMemStore(), pumptest.NewInbox())
	if o := p.ApplyBatch(t.Context(), rows); !o.Whole {
		t.Fatalf("batch: %s", describe(o))
	}
	pending := p.Pending()
	if len(pending) != len(rows) {
		t.Fatalf("%d results to write back, want %d", len(pending), len(rows))
	}
	for _, b := range pending {
		if !b.Processed.Equal(pending[0].Processed) {
			t.Fatalf("processed times %v and %v in one batch", pending[0].Processed, b.Processed)
		}
	}
}
