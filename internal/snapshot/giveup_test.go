package snapshot_test

import (
	"testing"

	"github.com/flightfeed/flightfeed/internal/snapshot"
)

// A day whose answers are refused the same way twice in a row is given up;
// a different refusal, or none before, starts counting
// again.
func TestAnswerRefusal(t *testing.T) {
	t.Parallel()
	const mixed = "MIXED_OPERATION_DAYS: RESP records span several operation days ([2026-09-09 2026-09-10])"
	const other = "MIXED_OPERATION_DAYS: RESP records span several operation days ([2026-09-09 2026-09-11])"
	const owner = "SAME_FLID_ACROSS_OPERATION_DAYS: 1 FLID(s) across operation days: 7 belongs to 2026-09-08, record says 2026-09-09"
	cases := []struct {
		name      string
		prev      string
		prevCount int
		refusal   string
		count     int
		giveUp    bool
	}{
		{"first refusal", "", 0, mixed, 1, false},
		{"second identical refusal", mixed, 1, mixed, 2, true},
		{"third identical refusal (a count carried past the limit)", mixed, 2, mixed, 3, true},
		{"another detail starts again", mixed, 1, other, 1, false},
		{"another reason starts again", mixed, 1, owner, 1, false},
		{"a stale reason without a count is no refusal in a row", mixed, 0, mixed, 1, false},
		{"identical day-mismatch refusals give up too", owner, 1, owner, 2, true},
	}
	for _, c := range cases {
		count, giveUp := snapshot.AnswerRefusal(c.prev, c.prevCount, c.refusal)
		if count != c.count || giveUp != c.giveUp {
			t.Errorf("%s: AnswerRefusal(%q, %d, %q) = %d, %v; want %d, %v", c.name, c.prev, c.prevCount, c.refusal, count, giveUp, c.count, c.giveUp)
		}
	}
}
