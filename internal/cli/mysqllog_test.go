package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

func TestMySQLLoggerPrint(t *testing.T) {
	var buf bytes.Buffer
	l := mysqlLogger{log: zap.New(zap.WriteTo(&buf)).WithName("mysql")}
	l.Print("packets.go:58 ", "unexpected EOF")
	l.Print("closing bad idle connection: ", "EOF")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []map[string]string{
		{"logger": "mysql", "msg": "mysql driver", "source": "packets.go:58", "error": "unexpected EOF"},
		{"logger": "mysql", "msg": "mysql driver", "error": "closing bad idle connection: EOF"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, line := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("line %d: %s = %v, want %q", i+1, k, got[k], v)
			}
		}
	}
}

// The MySQL driver's own lines ("packets.go:58 unexpected EOF") reach the
// command's structured log, not the process's stderr as plain text.
func TestMySQLDriverLogsThroughTheCommandsLogger(t *testing.T) {
	cfg := writeFeed(t, "root@tcp("+closingServer(t)+")/mbx", pgtest.New(t), "127.0.0.1:1")
	code, _, errOut := runCLI("pump", "--config", cfg, "--drain")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailed, errOut)
	}
	if !strings.Contains(errOut, `"logger":"mysql","msg":"mysql driver","source":"packets.go:`) {
		t.Fatalf("no driver line in the command's log:\n%s", errOut)
	}
}
