package proctest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// cgroupRoot is the cgroup v1 memory hierarchy of this machine kind.
const cgroupRoot = "/sys/fs/cgroup/memory"

var cgroupSeq atomic.Int64

// MemoryCgroup makes a memory cgroup with limit bytes and no swap, as a
// pod's memory limit is; it is removed when the test ends. A process runs
// in it from its first instruction with InCgroup.
func MemoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(cgroupRoot, "memory.limit_in_bytes")); err != nil {
		t.Fatalf("no cgroup v1 memory hierarchy at %s (this test creates a memory cgroup; run it as root on a cgroup v1 host): %v", cgroupRoot, err)
	}
	dir := filepath.Join(cgroupRoot, fmt.Sprintf("flightfeed-test-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatalf("create memory cgroup (run as root): %v", err)
	}
	t.Cleanup(func() {
		// The cgroup goes once its process has exited; give it a moment.
		for range 50 {
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("memory cgroup %s left behind", dir)
	})
	write := func(file string, v int64) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(v, 10)), 0o600); err != nil {
			t.Fatalf("set %s: %v", file, err)
		}
	}
	write("memory.limit_in_bytes", limit)
	if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil {
		write("memory.memsw.limit_in_bytes", limit)
	}
	return dir
}

// InCgroup returns the command line that runs argv inside cgroup cg from
// its first instruction: a shell joins the cgroup, then becomes argv.
func InCgroup(cg string, argv ...string) []string {
	return append([]string{"sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "sh", cg}, argv...)
}

// OOMKills is how many processes the kernel killed in cgroup cg for
// exceeding its limit.
func OOMKills(t *testing.T, cg string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cg, "memory.oom_control")) //nolint:gosec // G304: the test's own cgroup
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	// Older kernels have no oom_kill line; the failure count says whether
	// the limit was hit at all (a kill shows as the process's exit too).
	return 0
}

// CgroupPeak is the most memory cgroup cg's processes used at once.
func CgroupPeak(t *testing.T, cg string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cg, "memory.max_usage_in_bytes")) //nolint:gosec // G304: the test's own cgroup
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// WithoutEnv is env without the variable name.
func WithoutEnv(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
