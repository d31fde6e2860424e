package cli

import (
	"bytes"
	"strings"
	"testing"
)

// The manager and the pump take controller-runtime's zap flags, so the
// V-levels the code logs at can be switched on; the default stays JSON at
// info level.
func TestZapFlagsSetTheLogger(t *testing.T) {
	for _, name := range []string{"manager", "pump"} {
		for _, tc := range []struct {
			args             []string
			wantV2, wantJSON bool
		}{
			{nil, false, true},
			{[]string{"--zap-log-level=2"}, true, true},
			{[]string{"--zap-log-level=debug"}, false, true},
			{[]string{"--zap-devel"}, false, false},
			{[]string{"--zap-log-level=2", "--zap-encoder=console"}, true, false},
		} {
			cmd, _, err := NewRootCommand().Find([]string{name})
			if err != nil || cmd.Name() != name {
				t.Fatalf("no %s command: %v", name, err)
			}
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatalf("%s %v: %v", name, tc.args, err)
			}
			var buf bytes.Buffer
			cmd.SetErr(&buf)
			log := newLogger(cmd)
			log.Info("plain")
			log.V(2).Info("verbose")
			out := buf.String()
			if !strings.Contains(out, "plain") {
				t.Errorf("%s %v: no info line in %q", name, tc.args, out)
			}
			if got := strings.Contains(out, "verbose"); got != tc.wantV2 {
				t.Errorf("%s %v: V(2) line logged = %v, want %v: %q", name, tc.args, got, tc.wantV2, out)
			}
			if got := strings.HasPrefix(out, "{"); got != tc.wantJSON {
				t.Errorf("%s %v: JSON = %v, want %v: %q", name, tc.args, got, tc.wantJSON, out)
			}
		}
	}
}

func TestBadZapFlagIsAUsageError(t *testing.T) {
	code, _, errOut := runCLI("pump", "--config", "feed.yaml", "--zap-log-level=loud")
	if code != exitUsage || !strings.Contains(errOut, `invalid log level "loud"`) || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
