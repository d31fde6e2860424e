package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/config"
)

// mailbox.idlePollInterval defaults to 1s, or to pollInterval when that is
// longer, and a value set must lie between pollInterval and 1m.
func TestIdlePollInterval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mailbox string // the mailbox section's timings
		want    time.Duration
		err     string
	}{
		{"pollInterval: 100ms", time.Second, ""},
		{"pollInterval: 5s", 5 * time.Second, ""},
		{"pollInterval: 100ms, idlePollInterval: 100ms", 100 * time.Millisecond, ""},
		{"pollInterval: 100ms, idlePollInterval: 30s", 30 * time.Second, ""},
		{"pollInterval: 100ms, idlePollInterval: 1m", time.Minute, ""},
		{"pollInterval: 100ms, idlePollInterval: 50ms", 0, "mailbox.idlePollInterval: Invalid value: \"50ms\": must not be shorter than mailbox.pollInterval"},
		{"pollInterval: 100ms, idlePollInterval: 2m", 0, "mailbox.idlePollInterval: Invalid value: \"2m0s\": must be at most 1m"},
	} {
		doc := strings.Replace(minimal, "pollInterval: 100ms", tc.mailbox, 1)
		feed, err := config.Parse([]byte(doc))
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %q", tc.mailbox, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.mailbox, err)
		default:
			if got := config.IdlePollInterval(feed.Spec.Mailbox); got != tc.want {
				t.Errorf("%s: idle poll interval %v, want %v", tc.mailbox, got, tc.want)
			}
		}
	}
}
