package pumpdata_test

import (
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// skip-conflicts replays a day-mismatch snapshot and a snapshot
// the decoder refused for a record's content (the records are
// left out, each named); as-new replays any DEAD message.
func TestReplayFits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		policy, status, reason string
		refusal                string // "" when it fits
	}{
		{pumpdata.ReplayAsNew, pumpdata.StatusDead, "MALFORMED_XML", ""},
		{pumpdata.ReplayAsNew, pumpdata.StatusSucceeded, "", "it is SUCCEEDED, not DEAD"},
		{pumpdata.ReplaySkipConflicts, pumpdata.StatusDead, "SAME_FLID_ACROSS_OPERATION_DAYS", ""},
		{pumpdata.ReplaySkipConflicts, pumpdata.StatusDead, "BAD_TIME", ""},
		{pumpdata.ReplaySkipConflicts, pumpdata.StatusDead, "MISSING_FIELD", ""},
		{pumpdata.ReplaySkipConflicts, pumpdata.StatusDead, "SEQ_ZERO_MIXED", ""},
		{pumpdata.ReplaySkipConflicts, pumpdata.StatusDead, "DUPLICATE_FLID", "this message is DEAD(DUPLICATE_FLID)"},
		{pumpdata.ReplaySkipConflicts, pumpdata.StatusDead, "RECS_MISMATCH", "this message is DEAD(RECS_MISMATCH)"},
		{pumpdata.ReplaySkipConflicts, pumpdata.StatusDead, "MALFORMED_XML", "this message is DEAD(MALFORMED_XML)"},
		{pumpdata.ReplaySkipConflicts, pumpdata.StatusDead, "MIXED_OPERATION_DAYS", "this message is DEAD(MIXED_OPERATION_DAYS)"},
		{pumpdata.ReplaySkipConflicts, pumpdata.StatusFailed, "BAD_TIME", "it is FAILED, not DEAD"},
	}
	for _, c := range cases {
		got := pumpdata.ReplayFits(c.policy, c.status, c.reason)
		if (c.refusal == "") != (got == "") || !strings.Contains(got, c.refusal) {
			t.Errorf("ReplayFits(%s, %s, %s) = %q, want %q", c.policy, c.status, c.reason, got, c.refusal)
		}
	}
}
