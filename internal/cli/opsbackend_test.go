package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/readapi"
)

// "All" through the read API is at most its page; when the answer is that
// full, the command says so on standard error instead of cutting the list
// silently. A list asked with a limit, or one shorter than the maximum, says
// nothing.
func TestFeedAPISaysWhenAListIsCutAtItsMaximum(t *testing.T) {
	for _, tc := range []struct {
		asked, got int
		want       string
	}{
		{0, readapi.MaxListLimit, "the first 5000 messages only: the read API lists at most 5000 at once"},
		{0, readapi.MaxListLimit - 1, ""},
		{readapi.MaxListLimit, readapi.MaxListLimit, ""},
		{200, 200, ""},
	} {
		var warn bytes.Buffer
		a := &feedAPI{warn: &warn}
		a.capped(tc.asked, tc.got, "messages")
		if (tc.want == "" && warn.Len() > 0) || !strings.Contains(warn.String(), tc.want) {
			t.Errorf("asked %d, got %d: %q, want %q", tc.asked, tc.got, warn.String(), tc.want)
		}
	}
}
